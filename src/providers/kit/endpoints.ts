/**
 * A connector's vendor origins, with the operator's replacements (HubConfig.connectorEndpoints,
 * `DAMHUB_<ID>_ENDPOINTS`): a national cloud, a regional endpoint, a stand-in such as a replay
 * server. Each connector names its origins and their public defaults once; a replacement the
 * connector does not know is a configuration error at build time, never silently ignored.
 */
export type Endpoints<K extends string> = Record<K, string>;

export function vendorEndpoints<K extends string>(providerId: string, defaults: Endpoints<K>, overrides: Record<string, string> | undefined): Endpoints<K> {
  const out = { ...defaults };
  for (const [name, url] of Object.entries(overrides ?? {})) {
    if (!(name in defaults)) throw new Error(`${providerId}: unknown endpoint ${JSON.stringify(name)}; known: ${Object.keys(defaults).join(', ')}`);
    if (!/^https?:\/\/[^/]/.test(url)) throw new Error(`${providerId}: endpoint ${name} must be an http(s) URL`);
    out[name as K] = url.replace(/\/+$/, '');
  }
  return out;
}

/** Whether any replacement is plain http (a loopback stand-in): only then may the OAuth client speak http. */
export function insecureEndpoints(overrides: Record<string, string> | undefined): boolean {
  return Object.values(overrides ?? {}).some((u) => u.startsWith('http:'));
}
