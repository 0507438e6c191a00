/** Small value helpers shared by the metadata readers: how text and numbers are cleaned before they are stored. */

/**
 * Text as stored in the index: trimmed, NUL padding removed, NFC-normalised (so an NFD keyword from
 * a Mac tool and its NFC twin from IPTC de-duplicate), empty → undefined. Numbers become text.
 */
export function clean(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value !== 'string') return undefined;
  // eslint-disable-next-line no-control-regex
  const s = value.replace(/\u0000+$/g, '').trim().normalize('NFC');
  return s === '' ? undefined : s;
}

export function unique(values: string[]): string[] {
  return [...new Set(values.map(clean).filter((s): s is string => s !== undefined))];
}

export function positiveNumber(value: unknown): number | undefined {
  const n = typeof value === 'number' ? value : typeof value === 'string' && value.trim() ? Number(value) : NaN;
  return Number.isFinite(n) && n > 0 ? n : undefined;
}

export function positiveInt(value: unknown): number | undefined {
  const n = positiveNumber(value);
  return n !== undefined && Number.isInteger(n) ? n : undefined;
}

/** Up to two decimals, no trailing zeros: 2.8 → "2.8", 11 → "11", 118.1102 → "118.11". */
export function decimal(n: number | undefined): string | undefined {
  return n === undefined ? undefined : String(Number(n.toFixed(2)));
}

/** Assigns only defined values, so stored objects carry no `undefined` keys. */
export function setIf<T extends object, K extends keyof T>(target: T, key: K, value: T[K] | undefined): void {
  if (value !== undefined) target[key] = value;
}

export function firstLine(e: unknown): string {
  const message = e instanceof Error ? e.message : String(e);
  return message.split('\n')[0].trim();
}
