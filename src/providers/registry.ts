import { hubError, integrationError } from '../errors.js';
import type { Provider, ProviderCapabilities, ProviderDescriptor } from './contract.js';

/** The providers this node serves, by id. Routes reach providers only through here. */
export class ProviderRegistry {
  private readonly byId = new Map<string, Provider>();

  register(p: Provider): void {
    if (this.byId.has(p.descriptor.id)) throw new Error(`provider ${p.descriptor.id} registered twice`);
    this.byId.set(p.descriptor.id, p);
  }

  list(): Provider[] {
    return [...this.byId.values()];
  }

  get(id: string): Provider | undefined {
    return this.byId.get(id);
  }

  /** For routes: an unknown id is the caller's mistake. */
  require(id: string): Provider {
    const p = this.byId.get(id);
    if (!p) throw hubError('hub-validation-error', `unknown provider ${JSON.stringify(id)}; GET /auth/providers lists the available ones`);
    return p;
  }

  defaultId(): string | null {
    const list = this.list();
    return (list.find((p) => p.descriptor.isDefault) ?? list[0])?.descriptor.id ?? null;
  }
}

/** Answers 501 integration-not-supported for an operation the provider does not declare. */
export function requireCapability(d: ProviderDescriptor, cap: keyof ProviderCapabilities, what: string): void {
  if (!d.capabilities[cap]) throw integrationError('integration-not-supported', d.id, `${d.name} does not support ${what}`);
}
