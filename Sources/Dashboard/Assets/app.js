// jobctl dashboard: keeps the part of the page marked #live current, and nothing else.
// - A page with `data-events` (jobs, a job) listens to the server's event stream for the jobs it
//   shows (`data-watch`) and, on the jobs page, for new submissions (`data-listing`); on an
//   event it fetches the page again and swaps that part in.
// - A page with `data-refresh` (the fleet) fetches itself every so many seconds.
// A hidden tab closes its stream and fetches nothing; coming back, it catches up once. A fetch
// or a stream that fails (a restart, a proxy's 502, a 429) is tried again, waiting longer each
// time (up to a minute); a page whose session has ended stops.
// No framework, no build step.
"use strict";
(function () {
  const live = document.getElementById("live");
  if (!live) return;
  let busy = false;
  let again = false;
  let last = 0;
  let timer = null;
  let source = null;
  let streamKey = null;
  // Signed out (a fetch was sent to sign in): nothing more to keep live.
  let stopped = false;
  // The wait before trying again after a failure, doubled each time, reset by a success.
  let backoff = 0;

  // One retry waits at a time, however many things failed.
  let retry = null;

  function failed() {
    if (retry !== null) return;
    backoff = Math.min(60000, backoff ? backoff * 2 : 2000);
    retry = setTimeout(function () {
      retry = null;
      refresh();
    }, backoff);
  }

  async function refresh() {
    if (document.hidden || stopped) return;
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    last = Date.now();
    let ok = false;
    try {
      const response = await fetch(window.location.href, {
        credentials: "same-origin",
        headers: { "X-Jobctl-Fragment": "live" },
      });
      if (response.redirected) {
        stopped = true;
        disconnect();
        return;
      }
      if (!response.ok) {
        failed();
        return;
      }
      const page = new DOMParser().parseFromString(await response.text(), "text/html");
      const fresh = page.getElementById("live");
      if (!fresh) return;
      ok = true;
      // A page without a stream has nothing else to say it works again.
      if (!live.dataset.events) backoff = 0;
      if (fresh.innerHTML !== live.innerHTML) {
        // Ticked rows stay ticked across a refresh (the bulk actions' selection).
        const ticked = new Set([...live.querySelectorAll("input[type=checkbox]:checked")].map((box) => box.value));
        live.innerHTML = fresh.innerHTML;
        for (const box of live.querySelectorAll("input[type=checkbox]")) box.checked = ticked.has(box.value);
      }
      // What to watch follows what is shown.
      live.dataset.watch = fresh.dataset.watch || "";
      if (fresh.dataset.newest !== undefined) live.dataset.newest = fresh.dataset.newest;
    } catch (error) {
      // The server is restarting or the network is down.
      failed();
    } finally {
      busy = false;
      if (ok) connect();
      if (again) {
        again = false;
        soon();
      }
    }
  }

  // At most one fetch a second, however many events arrive.
  function soon() {
    if (timer !== null) return;
    const wait = Math.max(100, 1000 - (Date.now() - last));
    timer = setTimeout(function () {
      timer = null;
      refresh();
    }, wait);
  }

  function disconnect() {
    if (source) source.close();
    source = null;
    streamKey = null;
  }

  function connect() {
    if (!live.dataset.events || stopped) return;
    const watch = (live.dataset.watch || "").trim();
    const listing = live.dataset.listing === "1";
    if (document.hidden || (!watch && !listing)) {
      disconnect();
      return;
    }
    // The stream stays while the same jobs are shown: it has told of every change since the
    // tokens the page sent, so a fresher page needs no new one.
    const ids = watch.split(/\s+/).filter(Boolean).map((entry) => entry.split(".")[0]).sort().join(" ");
    const key = ids + (listing ? " listing" : "");
    if (source && streamKey === key) return;
    disconnect();
    streamKey = key;
    let url = live.dataset.events + "?watch=" + encodeURIComponent(watch);
    if (listing) url += "&listing=1&newest=" + encodeURIComponent(live.dataset.newest || "");
    source = new EventSource(url);
    source.addEventListener("change", soon);
    source.addEventListener("open", function () {
      backoff = 0;
    });
    // The browser reconnects by itself after a dropped connection. An answer other than the
    // stream (401: the session ended; 429, a proxy's 502) closes it: the page is fetched again
    // after a wait, which finds out which (signed out stops; anything else opens it again).
    source.addEventListener("error", function () {
      if (source && source.readyState === EventSource.CLOSED) {
        disconnect();
        failed();
      }
    });
  }

  document.addEventListener("visibilitychange", function () {
    if (document.hidden) {
      disconnect();
    } else {
      // Changes while hidden were not streamed: catch up once, then listen again.
      refresh();
    }
  });
  connect();
  const seconds = Number(live.dataset.refresh || "0");
  if (seconds > 0) setInterval(refresh, seconds * 1000);
})();
