import { useEffect } from "hono/jsx/dom";

/**
 * Names the page after what it shows once the data says so (the server's heading has only the address's key):
 * the h1 and the window's title, as the shell writes them.
 */
export function useHeading(text: string | undefined): void {
  useEffect(() => {
    if (text === undefined) return;
    const h1 = document.querySelector("main h1");
    if (h1) h1.textContent = text;
    document.title = `${text} · uae-fhir-sandbox`;
  }, [text]);
}
