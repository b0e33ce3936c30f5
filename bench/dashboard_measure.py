#!/usr/bin/env python3
"""Times the dashboard's views: dashboard_measure.py BASE ADMIN_KEY TENANT_KEY RUNS STORE.

Signs in as a browser does (the sign-in form's token and cookie, then the session cookie), then
requests each view RUNS times in a row and prints p50 and p95 of the whole request (headers and
body read), in ms, as JSON. A view that does not answer 200 fails the run.
"""
import http.cookiejar
import json
import re
import statistics
import sys
import time
import urllib.parse
import urllib.request


def session(base, key):
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(f"{base}/ui/signin").read().decode()
    token = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    body = urllib.parse.urlencode({"csrf": token, "key": key}).encode()
    opener.open(f"{base}/ui/signin", data=body).read()
    return opener


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered), max(1, round(fraction * len(ordered) + 0.4999))) - 1]


def measure(opener, url, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        response = opener.open(url)
        body = response.read()
        times.append((time.perf_counter() - start) * 1000)
        if response.status != 200:
            sys.exit(f"{url}: {response.status}")
    return {"p50_ms": round(statistics.median(times), 1), "p95_ms": round(percentile(times, 0.95), 1),
            "bytes": len(body)}, body.decode()


def main():
    base, admin_key, tenant_key, runs, store = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
    admin = session(base, admin_key)
    tenant = session(base, tenant_key)
    results = {"store": store, "runs": runs, "views": {}}
    views = [
        ("admin: not ended (default)", admin, "/ui/"),
        ("admin: all", admin, "/ui/?q="),
        ("admin: status:failed", admin, "/ui/?q=status:failed"),
        ("admin: kind:hls", admin, "/ui/?q=kind:hls"),
        ("admin: -preset:low", admin, "/ui/?q=-preset:low"),
        ("admin: worker:worker-3", admin, "/ui/?q=worker:worker-3"),
        ("admin: priority:>=4 status:completed", admin, "/ui/?q=priority:%3E%3D4%20status:completed"),
        ("admin: text talk-123456", admin, "/ui/?q=talk-123456"),
        ("tenant: not ended (default)", tenant, "/ui/"),
        ("tenant: all", tenant, "/ui/?q="),
        ("tenant: status:failed", tenant, "/ui/?q=status:failed"),
        ("admin: fleet", admin, "/ui/fleet"),
    ]
    for name, opener, path in views:
        result, page = measure(opener, base + path, runs)
        if 'role="alert"' in page:
            sys.exit(f"{name}: the page shows an error instead of jobs")
        results["views"][name] = result
        if name == "admin: all":
            older = re.search(r'class="next" href="([^"]+)"', page)
            job = re.search(r'href="jobs/([^"]+)"', page)
    # The page after 100 pages of "all" (a cursor deep in the table), and a job's page.
    opener, url = admin, base + "/ui/" + older.group(1).replace("&amp;", "&")
    for _ in range(100):
        page = opener.open(url).read().decode()
        url = base + "/ui/" + re.search(r'class="next" href="([^"]+)"', page).group(1).replace("&amp;", "&")
    results["views"]["admin: all, page 101"], _ = measure(admin, url, runs)
    results["views"]["admin: a job's page"], _ = measure(admin, f"{base}/ui/jobs/{job.group(1)}", runs)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
