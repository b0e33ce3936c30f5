// jobctl dashboard: keeps the part of the page marked #live current, and nothing else.
// - A page with `data-events` (jobs, a job) listens to the server's event stream for the jobs it
//   shows (`data-watch`) and, on the jobs page, for new submissions (`data-listing`); on an
//   event it fetches the page again and swaps that part in.
// - A page with `data-refresh` (the fleet) fetches itself every so many seconds.
// A hidden tab closes its stream and fetches nothing; coming back, it catches up once.
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

  async function refresh() {
    if (document.hidden) return;
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    last = Date.now();
    try {
      const response = await fetch(window.location.href, {
        credentials: "same-origin",
        headers: { "X-Jobctl-Fragment": "live" },
      });
      if (response.redirected || !response.ok) return;
      const page = new DOMParser().parseFromString(await response.text(), "text/html");
      const fresh = page.getElementById("live");
      if (!fresh) return;
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
      // The server is restarting or the network is down: the next event or tick tries again.
    } finally {
      busy = false;
      connect();
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
    if (!live.dataset.events) return;
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
    // The browser reconnects by itself after a dropped connection; a refusal (the session
    // ended) closes the stream for good, and the page says so at its next load.
    source.addEventListener("error", function () {
      if (source && source.readyState === EventSource.CLOSED) disconnect();
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
