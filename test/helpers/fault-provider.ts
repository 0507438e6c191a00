/**
 * A provider for fault injection, registered through the normal provider registry (Hub deps):
 * it signs in like the test provider and answers browse, search, asset and refresh according to
 * its current `mode`:
 *   ok        a small valid page
 *   slow      the valid page after `slowMs`
 *   hang      never answers
 *   error     throws a plain Error (a connector bug)
 *   down      throws integration-unavailable 503 (the DAM says it is down)
 *   garbage   answers values that are not the contract's shape
 */
import { integrationError } from '../../src/errors.js';
import type { Provider } from '../../src/providers/contract.js';
import type { Asset, AssetPage } from '../../src/providers/model.js';
import { testProvider } from './test-provider.js';

export type FaultMode = 'ok' | 'slow' | 'hang' | 'error' | 'down' | 'garbage';

export interface FaultProvider extends Provider {
  mode: FaultMode;
  slowMs: number;
  calls: number;
  /** Calls that are hanging right now. */
  hanging: number;
}

const GARBAGE: unknown[] = [null, 42, 'not a page', { assets: 'x', folders: 7 }, { assets: [{ id: 1, name: { deep: [] } }] }, [1, 2, 3]];

export function faultProvider(id = 'faulty'): FaultProvider {
  const base = testProvider({ id, refreshable: true });
  let garbageIndex = 0;
  const p: FaultProvider = {
    ...base,
    mode: 'ok',
    slowMs: 20,
    calls: 0,
    hanging: 0,
    descriptor: { ...base.descriptor, name: 'Faulty DAM', },
  };
  const answer = async <T>(value: () => T): Promise<T> => {
    p.calls++;
    switch (p.mode) {
      case 'ok':
        return value();
      case 'slow':
        await new Promise((r) => setTimeout(r, p.slowMs));
        return value();
      case 'hang':
        p.hanging++;
        return new Promise<T>(() => {});
      case 'error':
        throw new Error('socket hang up (injected)');
      case 'down':
        throw integrationError('integration-unavailable', id, 'injected outage');
      case 'garbage':
        return GARBAGE[garbageIndex++ % GARBAGE.length] as T;
    }
  };
  const page = (): AssetPage => ({ assets: [asset()], folders: [], filters: [], totalAssetsCount: 1 });
  const asset = (): Asset => ({ id: 'a1', name: 'one.jpg', type: 'image' } as unknown as Asset);
  p.browse = (_s, folderId) => answer(() => ({ ...page(), id: folderId, name: folderId }));
  p.search = () => answer(page);
  p.asset = () => answer(asset);
  p.refresh = (cred) => answer(() => ({ ...cred, refreshed: true }));
  p.providerInfo = () => answer(() => ({ remoteSystemPrefix: 'faulty' }));
  return p;
}
