// The fleet stands in for Envoys, whose TLS client (BoringSSL) verifies the
// controller's chain without building objects of it. Node's client, after the
// chain has been verified, asks for the *detailed* peer certificate only to
// hand it to checkServerIdentity (_tls_wrap.js onConnectSecure), and with
// OpenSSL 3 that copy re-decodes every certificate's public key: ~400 µs per
// handshake, against ~17 µs for the abbreviated one, measured here, and a
// quarter of a fleet worker's CPU while proxies fail over. checkServerIdentity
// reads only `subject` and `subjectaltname` (node:tls), which the abbreviated
// certificate carries, so the check itself is unchanged; OpenSSL's chain
// verification does not go through this call at all.
import tls from 'node:tls';

/** Makes every getPeerCertificate call in this process return the abbreviated certificate. */
export function abbreviatePeerCertificates(): void {
  const abbreviated = tls.TLSSocket.prototype.getPeerCertificate;
  const patched = function (this: tls.TLSSocket): tls.PeerCertificate {
    return abbreviated.call(this, false);
  };
  tls.TLSSocket.prototype.getPeerCertificate = patched as typeof abbreviated;
}
