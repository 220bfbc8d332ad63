import type { Bundle, Resource } from "fhir/r4.js";

/** JSON with object keys sorted, so that two serializations of the same content compare equal. */
function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.keys(value as Record<string, unknown>)
      .sort()
      .map((k) => [k, sorted((value as Record<string, unknown>)[k])]),
  );
}

/**
 * Problems with `meta.versionId` across resources a client received (R4
 * versioning: a version is one content; new content is a new version), for
 * resources with an id and a versionId: the same `Type/id` and version with
 * different content, or the same content under two versions.
 *
 * @example
 *   expect(versionProblems([pushBundle, answerBundle])).toEqual([]);
 */
export function versionProblems(bundles: readonly Bundle[]): string[] {
  const seen = new Map<string, Map<string, string>>();
  for (const bundle of bundles) {
    for (const entry of bundle.entry ?? []) {
      const resource = entry.resource as Resource | undefined;
      const version = resource?.meta?.versionId;
      if (!resource?.id || version === undefined) continue;
      const key = `${resource.resourceType}/${resource.id}`;
      // lastUpdated belongs to the version, so it is part of what must match.
      const content = JSON.stringify(sorted(resource));
      const versions = seen.get(key) ?? new Map<string, string>();
      seen.set(key, versions);
      versions.set(`${version}\u0000${content}`, version);
    }
  }
  const problems: string[] = [];
  for (const [key, versions] of seen) {
    const byVersion = new Map<string, number>();
    const byContent = new Map<string, Set<string>>();
    for (const [both, version] of versions) {
      byVersion.set(version, (byVersion.get(version) ?? 0) + 1);
      const content = both.slice(both.indexOf("\u0000") + 1);
      const { meta: _m, ...rest } = JSON.parse(content) as Resource;
      const bare = JSON.stringify(rest);
      if (!byContent.has(bare)) byContent.set(bare, new Set());
      byContent.get(bare)?.add(version);
    }
    for (const [version, n] of byVersion) if (n > 1) problems.push(`${key} version ${version} has ${n} contents`);
    for (const set of byContent.values())
      if (set.size > 1) problems.push(`${key} has one content under versions ${[...set].join(", ")}`);
  }
  return problems;
}
