#!/usr/bin/env python3
"""Plays a ladder in headless Chromium: browser-play.py DIR [PAGE].

Serves DIR on a loopback port, opens PAGE (player.html) in Debian's Chromium through
chromedriver, and checks what a viewer would: the <video> loads the master playlist's metadata,
plays 5 s from the start, seeks to every segment boundary of the first media playlist, and
plays its last 2 s to the `ended` event, with no error event. Also holds every playlist to
the `m3u8` parser from PyPI (an independent reader). Prints a JSON report on stdout; exits 1
on any failure (a missing browser included: it never skips).
"""
import functools
import http.server
import json
import os
import sys
import threading
import time

import m3u8
from selenium import webdriver
from selenium.webdriver.chrome.service import Service


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".m3u8": "application/vnd.apple.mpegurl",
        ".m4s": "video/iso.segment",
        ".mp4": "video/mp4",
        ".mpd": "application/dash+xml",
    }

    def log_message(self, *args):
        pass


def fail(report, message):
    report["ok"] = False
    report["failure"] = message
    print(json.dumps(report))
    sys.exit(1)


def parse_playlists(directory, report):
    master = m3u8.load(os.path.join(directory, "master.m3u8"))
    if not master.is_variant:
        fail(report, "master.m3u8 is not a master playlist to the m3u8 parser")
    report["variants"] = [
        {"uri": p.uri, "bandwidth": p.stream_info.bandwidth, "codecs": p.stream_info.codecs,
         "resolution": p.stream_info.resolution}
        for p in master.playlists
    ]
    boundaries = None
    for uri in [p.uri for p in master.playlists] + [m.uri for m in master.media if m.uri]:
        media = m3u8.load(os.path.join(directory, uri))
        if not media.is_endlist or media.playlist_type != "vod":
            fail(report, f"{uri}: not a VOD playlist with an ENDLIST")
        for segment in media.segments:
            # RFC 8216 4.3.3.1: each EXTINF, rounded to the nearest integer, at most the target.
            if int(segment.duration + 0.5) > media.target_duration:
                fail(report, f"{uri}: EXTINF {segment.duration} over the target {media.target_duration}")
        if boundaries is None and media.segments:
            starts, at = [], 0.0
            for segment in media.segments:
                starts.append(round(at, 3))
                at += segment.duration
            boundaries = starts
            report["duration"] = round(at, 3)
    return boundaries or [0.0]


def main():
    directory = os.path.abspath(sys.argv[1])
    page = sys.argv[2] if len(sys.argv) > 2 else "player.html"
    report = {"ok": True}
    boundaries = parse_playlists(directory, report)
    handler = functools.partial(QuietHandler, directory=directory)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                 "--autoplay-policy=no-user-gesture-required", "--mute-audio"]:
        options.add_argument(flag)
    try:
        driver = webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))
    except Exception as error:  # a missing or broken browser fails the test
        fail(report, f"cannot start headless Chromium: {error}")
    try:
        driver.set_script_timeout(60)
        driver.get(f"http://127.0.0.1:{server.server_address[1]}/{page}")
        driver.execute_script("""
            const v = document.querySelector('video');
            window.__errors = [];
            v.addEventListener('error', () => window.__errors.push(v.error ? v.error.code + ' ' + v.error.message : 'error'));
        """)
        deadline = time.time() + 30
        while time.time() < deadline:
            state = driver.execute_script("const v = document.querySelector('video'); return [v.readyState, v.duration, v.error && v.error.message];")
            if state[2] or state[0] >= 1:
                break
            time.sleep(0.2)
        report["readyState"], report["mediaDuration"] = state[0], state[1]
        if state[2] or state[0] < 1:
            fail(report, f"no metadata: readyState {state[0]}, error {state[2]}")
        played = driver.execute_async_script("""
            const done = arguments[arguments.length - 1];
            const v = document.querySelector('video');
            v.muted = true;
            v.play().then(() => setTimeout(() => done([v.currentTime, v.paused, v.ended]), 5500),
                          (e) => done(['play refused: ' + e]));
        """)
        report["played"] = played
        if not isinstance(played[0], (int, float)) or played[0] < min(4.0, report.get("duration", 5) - 1.0):
            fail(report, f"did not play 5 s: {played}")
        seeks = []
        for target in boundaries:
            result = driver.execute_async_script("""
                const done = arguments[arguments.length - 1];
                const v = document.querySelector('video');
                const target = arguments[0];
                const timer = setTimeout(() => done(['timeout', v.currentTime, v.readyState]), 20000);
                v.addEventListener('seeked', () => { clearTimeout(timer); done(['seeked', v.currentTime, v.readyState]); }, {once: true});
                v.currentTime = target + 0.05;
            """, target)
            seeks.append({"to": target, "result": result})
            if result[0] != "seeked" or abs(result[1] - (target + 0.05)) > 0.5:
                report["seeks"] = seeks
                fail(report, f"seek to {target} s: {result}")
        report["seeks"] = seeks
        # Plays the last 2 s to the end: a player stalls where the shortest track ends when
        # the sound and the picture end apart (hls.js #7266, dash.js #1739).
        ending = driver.execute_async_script("""
            const done = arguments[arguments.length - 1];
            const v = document.querySelector('video');
            const timer = setTimeout(() => done(['timeout', v.currentTime, v.duration, v.readyState]), 30000);
            v.addEventListener('ended', () => { clearTimeout(timer); done(['ended', v.currentTime, v.duration]); }, {once: true});
            v.currentTime = Math.max(0, v.duration - 2);
            v.play().catch((e) => { clearTimeout(timer); done(['play refused: ' + e]); });
        """)
        report["ending"] = ending
        if ending[0] != "ended":
            fail(report, f"did not play to the end: {ending}")
        report["ended"] = True
        errors = driver.execute_script("return window.__errors;")
        if errors:
            fail(report, f"error events: {errors}")
        driver.save_screenshot(os.path.join(directory, ".browser-play.png"))
    finally:
        driver.quit()
        server.shutdown()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
