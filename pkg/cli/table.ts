/** Columns padded to the widest cell, two spaces apart, like kubectl; trailing spaces trimmed. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  return all
    .map((r) =>
      widths
        .map((w, i) => (r[i] ?? '').padEnd(w))
        .join('  ')
        .trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join('');
}
