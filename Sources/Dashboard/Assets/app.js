// jobctl dashboard: keeps the part of the page marked #live current. Every `data-refresh`
// seconds while the tab is visible it fetches the page again and swaps that part in; a hidden
// tab fetches nothing. No framework, no build step.
"use strict";
(function () {
  const live = document.getElementById("live");
  if (!live) return;
  const seconds = Number(live.dataset.refresh || "0");
  if (!(seconds > 0)) return;
  let busy = false;
  async function refresh() {
    if (busy || document.hidden) return;
    busy = true;
    try {
      const response = await fetch(window.location.href, {
        credentials: "same-origin",
        headers: { "X-Jobctl-Fragment": "live" },
      });
      if (response.redirected || !response.ok) return;
      const page = new DOMParser().parseFromString(await response.text(), "text/html");
      const fresh = page.getElementById("live");
      if (fresh && fresh.innerHTML !== live.innerHTML) {
        // Ticked rows stay ticked across a refresh (the bulk actions' selection).
        const ticked = new Set([...live.querySelectorAll("input[type=checkbox]:checked")].map((box) => box.value));
        live.innerHTML = fresh.innerHTML;
        for (const box of live.querySelectorAll("input[type=checkbox]")) box.checked = ticked.has(box.value);
      }
    } catch (error) {
      // The server is restarting or the network is down: the next tick tries again.
    } finally {
      busy = false;
    }
  }
  setInterval(refresh, seconds * 1000);
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) refresh();
  });
})();
