import type { XdsObserver } from '../xds/server/observer.js';

/** Every stream event changes some proxy's state on the page: connect, disconnect, a response sent, an ACK, a NACK. */
export function notifyOnStreamEvents(notify: () => void): XdsObserver {
  return { onConnect: notify, onDisconnect: notify, onResponse: notify, onAck: notify, onNack: notify };
}
