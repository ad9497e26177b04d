import type { MeshStore, StoreEvent } from '../registry/store.js';
import type { AnnouncementBus } from './bus.js';

/**
 * Publishes one announcement per effective store change. MeshConfig changes
 * are `config` announcements (they can change settings, not only policy).
 * Returns a function that stops publishing.
 */
export function publishStoreChanges(store: MeshStore, bus: AnnouncementBus): () => void {
  const onChange = (e: StoreEvent) => {
    bus.announce(e.kind === 'MeshConfig' ? 'config' : 'store', `${e.type} ${e.kind} ${e.key}`, {
      subject: `${e.kind} ${e.key}`,
      version: store.version,
    });
  };
  store.on('change', onChange);
  return () => {
    store.off('change', onChange);
  };
}
