// RE2 compatibility of the regexes policy objects carry (HTTPRouteGroup
// matches, UpstreamTrafficSetting httpRoutes paths).

/**
 * Envoy matches these with RE2, which lacks lookaround and backreferences; a
 * pattern using them would be NACKed by every proxy, so catch it here.
 */
export function regexProblem(pattern: string): string | undefined {
  try {
    new RegExp(pattern);
  } catch (err) {
    return `invalid regular expression: ${err instanceof Error ? err.message : String(err)}`;
  }
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') {
      const next = pattern[i + 1] ?? '';
      if (!inClass && /[1-9]/.test(next)) return 'backreferences are not supported (RE2)';
      i++;
    } else if (inClass) {
      if (c === ']') inClass = false;
    } else if (c === '[') {
      inClass = true;
    } else if (c === '(' && /^\(\?(=|!|<=|<!)/.test(pattern.slice(i))) {
      return 'lookaround is not supported (RE2)';
    }
  }
  return undefined;
}
