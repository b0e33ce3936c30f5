#!/usr/bin/env python3
"""Uses the dashboard in headless Chromium as a person would: browser-dashboard.py CONFIG.

CONFIG is a JSON file: {"base": "http://127.0.0.1:PORT", "submit_key": "jck_…",
"read_key": "jck_…", "job": {…a POST /v1/jobs body…}, "worker": [argv of a worker],
"screenshots": "DIR"}. With no worker running yet, it signs in, submits the job through the
API and sees it appear without a reload, cancels it and retries it from the job's page, starts
the worker and sees the job complete without a reload; then signs in with the read key, which
is offered no action and is refused one (403), and forges an action without the form's token
(403). Each page is saved as a screenshot, also at 360 px wide. Prints a JSON report; exits 1
on any failure (a missing browser included: it never skips).
"""
import json
import os
import subprocess
import sys
import time
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

report = {"ok": True, "steps": []}


def fail(message):
    report["ok"] = False
    report["failure"] = message
    print(json.dumps(report))
    sys.exit(1)


def step(name):
    report["steps"].append(name)


def wait_for(driver, what, condition, seconds=30):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            if condition():
                return
        except Exception:
            pass
        time.sleep(0.2)
    fail(f"timed out waiting for {what} on {driver.current_url}")


def main():
    config = json.load(open(sys.argv[1]))
    base = config["base"]
    shots = config["screenshots"]
    os.makedirs(shots, exist_ok=True)
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,900"]:
        options.add_argument(flag)
    try:
        driver = webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))
    except Exception as error:
        fail(f"cannot start headless Chromium: {error}")
    worker = None
    try:
        worker = run(driver, config, base, shots)
    finally:
        if worker:
            worker.terminate()
            worker.wait(timeout=30)
        driver.quit()
    print(json.dumps(report))


def shot(driver, shots, name):
    driver.save_screenshot(os.path.join(shots, f"{name}.png"))


def sign_in(driver, base, key):
    driver.get(f"{base}/ui/")
    wait_for(driver, "the sign-in page", lambda: driver.current_url.endswith("/ui/signin"))
    field = driver.find_element(By.ID, "key")
    if field.get_attribute("type") != "password":
        fail("the key field is not a password field")
    field.send_keys(key)
    driver.find_element(By.CSS_SELECTOR, "form.signin button[type=submit]").click()
    wait_for(driver, "the jobs page", lambda: driver.find_element(By.TAG_NAME, "h1").text == "Jobs")


def submit(base, key, body):
    """Submits a job through the HTTP API, as the user's service would; returns its id."""
    request = urllib.request.Request(
        f"{base}/v1/jobs",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        method="POST",
    )
    return json.load(urllib.request.urlopen(request))["id"]


def badge(driver):
    return driver.find_element(By.CSS_SELECTOR, "#live .badge").text


def completed_page(driver, base, key, body, what, seconds):
    """Submits `body`, waits on its page for it to complete, and loads the page once more (the
    output is shown by a full page, not by the live part); returns the job's id."""
    job = submit(base, key, body)
    driver.get(f"{base}/ui/jobs/{job}")
    wait_for(driver, f"the {what} job to complete", lambda: badge(driver) == "completed", seconds=seconds)
    driver.get(f"{base}/ui/jobs/{job}")
    return job


def run(driver, config, base, shots):
    driver.get(f"{base}/ui/")
    wait_for(driver, "the sign-in page", lambda: "signin" in driver.current_url)
    shot(driver, shots, "signin")
    step("signed out: sent to sign in")

    sign_in(driver, base, config["submit_key"])
    driver.execute_script("window.__noReload = true")
    step("signed in")

    job_id = submit(base, config["submit_key"], config["job"])
    report["job"] = job_id
    wait_for(
        driver,
        "the new job to appear without a reload",
        lambda: driver.find_elements(By.CSS_SELECTOR, f"#live a[title='{job_id}']"),
        seconds=10,
    )
    if not driver.execute_script("return window.__noReload === true"):
        fail("the jobs page reloaded to show the new job")
    shot(driver, shots, "jobs")
    driver.set_window_size(360, 800)
    shot(driver, shots, "jobs-360")
    width = driver.execute_script("return document.documentElement.scrollWidth")
    report["width_at_360"] = width
    if width > 400:
        fail(f"the jobs page is {width} px wide in a 360 px window")
    driver.set_window_size(1280, 900)
    step("the submitted job appeared live")

    driver.find_element(By.CSS_SELECTOR, f"#live a[title='{job_id}']").click()
    wait_for(driver, "the job page", lambda: job_id in driver.find_element(By.TAG_NAME, "h1").text)
    driver.find_element(By.XPATH, "//button[normalize-space()='Cancel']").click()
    wait_for(driver, "the job to be cancelled", lambda: badge(driver) == "cancelled")
    if "Cancelled." not in driver.find_element(By.CSS_SELECTOR, ".flash").text:
        fail("no word that the job was cancelled")
    step("cancelled from the job's page")
    driver.find_element(By.XPATH, "//button[normalize-space()='Retry']").click()
    wait_for(driver, "the job to be queued again", lambda: badge(driver) == "queued")
    driver.execute_script("window.__noReload = true")
    step("retried from the job's page")

    worker = subprocess.Popen(config["worker"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(driver, "the job to complete without a reload", lambda: badge(driver) == "completed", seconds=90)
    if not driver.execute_script("return window.__noReload === true"):
        fail("the job page reloaded to show the completion")
    text = driver.find_element(By.TAG_NAME, "main").text
    for expected in ["Actions taken", "cancel by key", "retry by key", "Timeline"]:
        if expected not in text:
            fail(f"the job page does not show '{expected}'")
    step("completed live, with its audit trail")

    # The output plays: a reload shows it (the live part has it already), and it seeks.
    driver.get(driver.current_url.split("?")[0])
    played = driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const v = document.querySelector('video.output');
        if (!v) return done({error: 'no video on the page'});
        v.muted = true;
        const report = () => done({duration: v.duration, time: v.currentTime, error: v.error && v.error.message});
        v.addEventListener('error', report);
        const go = () => v.play().then(() => setTimeout(() => { v.currentTime = 0.5;
            v.addEventListener('seeked', report, {once: true}); }, 300)).catch(e => done({error: String(e)}));
        if (v.readyState >= 1) go(); else v.addEventListener('loadedmetadata', go, {once: true});
    """)
    report["video"] = played
    if played.get("error") or abs(played.get("duration", 0) - 1) > 0.1 or played.get("time", 0) < 0.4:
        fail(f"the output did not play and seek: {played}")
    shot(driver, shots, "job")
    step("the output plays and seeks in the page")

    completed_page(driver, base, config["submit_key"], config["thumbnails"], "thumbnails", 60)
    wait_for(
        driver,
        "its pictures to load",
        lambda: driver.execute_script(
            "const i = [...document.querySelectorAll('.images img')];"
            " return i.length == 2 && i.every(x => x.complete && x.naturalWidth > 0)"
        ),
    )
    shot(driver, shots, "thumbnails")
    step("a thumbnails job's pictures on its page")

    completed_page(driver, base, config["submit_key"], config["waveform"], "waveform", 60)
    drawn = driver.execute_script(
        "const s = document.querySelector('svg.waveform polygon');"
        " if (!s) return null; const b = s.getBBox(); return {width: b.width, height: b.height}"
    )
    report["waveform"] = drawn
    if not drawn or drawn["width"] < 500 or drawn["height"] < 5:
        fail(f"the waveform is not drawn across the page: {drawn}")
    shot(driver, shots, "waveform")
    step("a waveform job's peaks drawn on its page")

    # An HLS ladder plays in the page's <video> from its master playlist (Chromium plays fMP4
    # HLS natively), its segments fetched through the session.
    ladder = completed_page(driver, base, config["submit_key"], config["hls"], "ladder", 90)
    played = driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const v = document.querySelector('video.output');
        if (!v) return done({error: 'no video on the page'});
        if (!v.src.endsWith('/files/master.m3u8')) return done({error: 'the video is not the master playlist: ' + v.src});
        v.muted = true;
        v.addEventListener('error', () => done({error: v.error && v.error.message}));
        v.play().then(() => setTimeout(() => done({duration: v.duration, time: v.currentTime}), 700))
            .catch(e => done({error: String(e)}));
    """)
    report["hls"] = played
    if played.get("error") or not played.get("duration") or played.get("time", 0) <= 0:
        fail(f"the ladder did not play: {played}")
    step("an HLS ladder plays on its page")

    # A hidden tab holds no stream: the server's watchers (its /metrics) drop to none, and
    # come back when the tab is shown again.
    def watchers():
        request = urllib.request.Request(
            f"{base}/metrics", headers={"Authorization": f"Bearer {config['admin_key']}"}
        )
        text = urllib.request.urlopen(request).read().decode()
        line = next(x for x in text.splitlines() if x.startswith("jobctl_api_watchers"))
        return float(line.split()[-1])

    visibility = (
        "Object.defineProperty(document, 'hidden', {configurable: true, get: () => arguments[0]});"
        " document.dispatchEvent(new Event('visibilitychange'))"
    )
    driver.get(f"{base}/ui/jobs/{ladder}")
    wait_for(driver, "the page's stream", lambda: watchers() >= 1)
    driver.execute_script(visibility, True)
    wait_for(driver, "no stream while the tab is hidden", lambda: watchers() == 0)
    driver.execute_script(visibility, False)
    wait_for(driver, "the stream again once the tab is shown", lambda: watchers() >= 1)
    step("a hidden tab holds no stream")

    # Keyboard: the skip link is the first stop, and every control can be reached.
    driver.find_element(By.TAG_NAME, "body").send_keys("\t")
    focused = driver.switch_to.active_element
    if focused.get_attribute("class") != "skip":
        fail("the first tab stop is not the skip link")
    unlabelled = driver.execute_script("""
        return [...document.querySelectorAll('input:not([type=hidden]), button, select')]
          .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !e.textContent.trim())
          .map(e => e.outerHTML)""")
    if unlabelled:
        fail(f"controls without a label: {unlabelled}")
    step("keyboard and labels")

    # Forged: the same session, an action without the form's token.
    status = driver.execute_script(
        "return fetch(arguments[0], {method: 'POST', credentials: 'same-origin',"
        " headers: {'Content-Type': 'application/x-www-form-urlencoded'}, body: ''}).then(r => r.status)",
        f"{base}/ui/jobs/{job_id}/retry",
    )
    if status != 403:
        fail(f"an action without the form token was answered {status}")
    step("a forged action was refused")

    driver.find_element(By.XPATH, "//button[normalize-space()='Sign out']").click()
    wait_for(driver, "the sign-in page", lambda: "signin" in driver.current_url)
    sign_in(driver, base, config["read_key"])
    if driver.find_elements(By.CSS_SELECTOR, f"#live a[title='{job_id}']"):
        fail("a read key of another tenant sees the job")
    token = driver.find_element(By.CSS_SELECTOR, "form.signout input[name=csrf]").get_attribute("value")
    driver.get(f"{base}/ui/jobs/{job_id}")
    if driver.find_elements(By.XPATH, "//button[normalize-space()='Retry' or normalize-space()='Cancel']"):
        fail("a read key is offered actions")
    status = driver.execute_script(
        "return fetch(arguments[0], {method: 'POST', credentials: 'same-origin',"
        " headers: {'Content-Type': 'application/x-www-form-urlencoded'}, body: 'csrf=' + arguments[1]})"
        ".then(r => r.status)",
        f"{base}/ui/jobs/{job_id}/retry",
        token,
    )
    if status != 403:
        fail(f"an action with a read key was answered {status}")
    shot(driver, shots, "job-read-only")
    step("a read key looks and is refused an action")

    driver.get(f"{base}/ui/")
    driver.find_element(By.XPATH, "//button[normalize-space()='Sign out']").click()
    wait_for(driver, "the sign-in page", lambda: "signin" in driver.current_url)
    sign_in(driver, base, config["admin_key"])
    driver.find_element(By.LINK_TEXT, "Fleet").click()
    wait_for(driver, "the fleet page", lambda: driver.find_element(By.TAG_NAME, "h1").text == "Fleet")

    def charted():
        chart = driver.find_element(By.CSS_SELECTOR, "svg.chart").get_attribute("aria-label")
        return "browser-worker" in driver.find_element(By.ID, "live").text and "highest 0 jobs; failed" not in chart

    wait_for(driver, "the worker and the completed jobs on the fleet page", charted, seconds=40)
    shot(driver, shots, "fleet")
    step("the fleet page shows the worker and the jobs that ended")

    # A bulk action's confirmation counts the jobs and changes nothing until confirmed.
    driver.get(f"{base}/ui/?q=status:completed")
    boxes = driver.find_elements(By.CSS_SELECTOR, "#live input[type=checkbox]")
    if len(boxes) < 2:
        fail(f"{len(boxes)} completed jobs to tick on the jobs page")
    for box in boxes[:2]:
        box.click()
    driver.find_element(By.XPATH, "//button[normalize-space()='Retry…']").click()
    wait_for(driver, "the confirmation", lambda: "Retry 2 jobs" in driver.find_element(By.TAG_NAME, "main").text)
    shot(driver, shots, "bulk-confirm")
    driver.get(f"{base}/ui/?q=status:completed")
    if len(driver.find_elements(By.CSS_SELECTOR, "#live input[type=checkbox]")) != len(boxes):
        fail("the bulk action changed jobs before it was confirmed")
    step("a bulk action is confirmed with its count first")

    behind_a_proxy(driver, config, shots)
    return worker


def behind_a_proxy(driver, config, shots):
    """The same dashboard under a base path behind nginx (a real proxy, not ours): signing in,
    links, redirects, the session cookie and the live event stream all work under the prefix."""
    import shutil
    import socket
    import tempfile

    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.path.exists(nginx):
        fail("nginx is missing (make test installs nginx-light)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    prefix = tempfile.mkdtemp(prefix="jobctl-nginx-")
    upstream = config["base"].split("://", 1)[1]
    conf = os.path.join(prefix, "nginx.conf")
    with open(conf, "w") as out:
        out.write(f"""
daemon off; master_process off; worker_processes 1; pid {prefix}/nginx.pid; error_log {prefix}/error.log;
events {{}}
http {{
    access_log off;
    client_body_temp_path {prefix}/body; proxy_temp_path {prefix}/proxy; fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi; scgi_temp_path {prefix}/scgi;
    server {{
        listen 127.0.0.1:{port};
        location /media-queue/ {{
            proxy_pass http://{upstream}/;
            proxy_http_version 1.1;
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_buffering off;
            proxy_read_timeout 1h;
        }}
    }}
}}
""")
    proxy = subprocess.Popen([nginx, "-p", prefix, "-c", conf], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        base = f"http://127.0.0.1:{port}/media-queue"
        deadline = time.time() + 10
        while True:
            try:
                urllib.request.urlopen(f"{base}/ui/signin")
                break
            except Exception as error:
                if proxy.poll() is not None or time.time() > deadline:
                    fail(f"nginx did not start: {error} {proxy.stderr.read().decode() if proxy.poll() is not None else ''}")
                time.sleep(0.2)
        driver.delete_all_cookies()
        sign_in(driver, base, config["submit_key"])
        if not driver.current_url.startswith(base + "/ui/"):
            fail(f"signing in under the prefix landed on {driver.current_url}")
        styled = driver.execute_script("return getComputedStyle(document.querySelector('.skip')).position")
        if styled != "absolute":
            fail("the stylesheet did not load under the prefix")
        # Every job, ended or not: the worker still runs and may finish it before it shows.
        driver.find_element(By.PARTIAL_LINK_TEXT, "All").click()
        wait_for(driver, "the list of all jobs", lambda: driver.current_url == f"{base}/ui/?q=")
        driver.execute_script("window.__noReload = true")
        job_id = submit(config["base"], config["submit_key"], config["job_again"])
        wait_for(
            driver,
            "a new job to appear live through the proxy",
            lambda: driver.find_elements(By.CSS_SELECTOR, f"#live a[title='{job_id}']"),
            seconds=10,
        )
        driver.find_element(By.CSS_SELECTOR, f"#live a[title='{job_id}']").click()
        wait_for(driver, "the job page under the prefix", lambda: driver.current_url == f"{base}/ui/jobs/{job_id}")
        driver.execute_script("window.__noReload = true")
        wait_for(driver, "the job to complete live through the proxy", lambda: badge(driver) == "completed", seconds=90)
        if not driver.execute_script("return window.__noReload === true"):
            fail("the job page reloaded behind the proxy")
        shot(driver, shots, "job-behind-proxy")
        driver.find_element(By.XPATH, "//button[normalize-space()='Sign out']").click()
        wait_for(driver, "the sign-in page under the prefix", lambda: driver.current_url == f"{base}/ui/signin")
        step("under a base path behind nginx: signed in, live, signed out")
    finally:
        proxy.terminate()
        proxy.wait(timeout=10)


if __name__ == "__main__":
    main()
