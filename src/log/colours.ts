/** ANSI colours for the pretty log, or none: one palette of functions, so formatting code never branches on it. */
export interface Palette {
  dim(text: string): string;
  bold(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  magenta(text: string): string;
  cyan(text: string): string;
}

const ansi = (open: number, close: number) => (text: string) => `\u001b[${open}m${text}\u001b[${close}m`;

export const COLOURS: Palette = {
  dim: ansi(2, 22),
  bold: ansi(1, 22),
  red: ansi(31, 39),
  green: ansi(32, 39),
  yellow: ansi(33, 39),
  magenta: ansi(35, 39),
  cyan: ansi(36, 39),
};

export const PLAIN: Palette = {
  dim: String,
  bold: String,
  red: String,
  green: String,
  yellow: String,
  magenta: String,
  cyan: String,
};
