import { hubError } from '../errors.js';
import { capabilitiesOf, checkProvider } from './capabilities.js';
import type { Provider, ProviderCapabilities } from './contract.js';

/**
 * The providers this node serves, by id: the one registry. Routes and MCP tools reach providers
 * only through here; every provider is checked once, here, as it is registered.
 */
export class ProviderRegistry {
  private readonly byId = new Map<string, { provider: Provider; capabilities: ProviderCapabilities }>();

  register(p: Provider): void {
    if (this.byId.has(p.descriptor.id)) throw new Error(`provider ${p.descriptor.id} registered twice`);
    checkProvider(p);
    this.byId.set(p.descriptor.id, { provider: p, capabilities: capabilitiesOf(p) });
  }

  list(): Provider[] {
    return [...this.byId.values()].map((e) => e.provider);
  }

  get(id: string): Provider | undefined {
    return this.byId.get(id)?.provider;
  }

  /** What the provider can do (derived once at registration, capabilities.ts). */
  capabilities(id: string): ProviderCapabilities | undefined {
    return this.byId.get(id)?.capabilities;
  }

  /** For routes: an unknown id is the caller's mistake. */
  require(id: string): Provider {
    const p = this.get(id);
    if (!p) throw hubError('hub-validation-error', `unknown provider ${JSON.stringify(id)}; GET /auth/providers lists the available ones`);
    return p;
  }

  defaultId(): string | null {
    const list = this.list();
    return (list.find((p) => p.descriptor.isDefault) ?? list[0])?.descriptor.id ?? null;
  }

  /** Each provider's start(), in registration order. */
  async start(): Promise<void> {
    for (const p of this.list()) await p.start?.();
  }

  /** Each provider's close(), in reverse order; every one is tried, the first failure is thrown. */
  async close(): Promise<void> {
    const failures: unknown[] = [];
    for (const p of this.list().reverse()) await p.close?.().catch((e: unknown) => failures.push(e));
    if (failures.length) throw failures[0];
  }
}
