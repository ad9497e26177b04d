import type { XdsObserver } from './observer.js';

/** One observer that tells each of several (metrics, the web view's live feed) everything. */
export function composeObservers(...observers: XdsObserver[]): XdsObserver {
  return {
    onConnect: (kind) => {
      for (const o of observers) o.onConnect?.(kind);
    },
    onDisconnect: (kind) => {
      for (const o of observers) o.onDisconnect?.(kind);
    },
    onResponse: (typeUrl, nonce) => {
      for (const o of observers) o.onResponse?.(typeUrl, nonce);
    },
    onAck: (typeUrl, nonce, seconds) => {
      for (const o of observers) o.onAck?.(typeUrl, nonce, seconds);
    },
    onNack: (typeUrl) => {
      for (const o of observers) o.onNack?.(typeUrl);
    },
    onRefused: (reason) => {
      for (const o of observers) o.onRefused?.(reason);
    },
    onIgnored: (reason) => {
      for (const o of observers) o.onIgnored?.(reason);
    },
    onResourceRefused: (typeUrl, reason) => {
      for (const o of observers) o.onResourceRefused?.(typeUrl, reason);
    },
  };
}
