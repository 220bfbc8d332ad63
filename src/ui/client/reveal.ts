/**
 * Opens every closed `details` around the element the address's fragment names, and scrolls to it: a link to an
 * issue's mark or an entry inside a folded body shows it. Chromium does this on its own for fragment links; this
 * covers the other browsers, and a page whose content came after the browser looked for the fragment.
 */
export function revealHash(): void {
  const id = decodeURIComponent(location.hash.slice(1));
  const target = id ? document.getElementById(id) : null;
  if (!target) return;
  for (let d = target.closest("details"); d; d = d.parentElement?.closest("details") ?? null) d.open = true;
  target.scrollIntoView();
}

window.addEventListener("hashchange", revealHash);
