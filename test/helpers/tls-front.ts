import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A CA made with the openssl CLI and a client certificate it signed (for a server that asks clients
 * for one); `dir` is removed by the caller.
 */
export function makeClientCertificate(): { dir: string; caFile: string; ca: Buffer; certFile: string; keyFile: string } {
  const dir = mkdtempSync(join(tmpdir(), 'report-sync-client-tls-'));
  const file = (name: string) => join(dir, name);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  execFileSync('openssl', ['req', '-x509', ...ec, '-keyout', file('ca.key'), '-out', file('ca.pem'), '-days', '2', '-subj', '/CN=report-sync test CA'], { stdio: 'ignore' });
  execFileSync('openssl', ['req', ...ec, '-keyout', file('client.key'), '-out', file('client.csr'), '-subj', '/CN=report-sync client'], { stdio: 'ignore' });
  execFileSync(
    'openssl',
    ['x509', '-req', '-in', file('client.csr'), '-CA', file('ca.pem'), '-CAkey', file('ca.key'), '-CAcreateserial', '-out', file('client.pem'), '-days', '2'],
    { stdio: 'ignore' },
  );
  return { dir, caFile: file('ca.pem'), ca: readFileSync(file('ca.pem')), certFile: file('client.pem'), keyFile: file('client.key') };
}

/**
 * A self-signed certificate for 127.0.0.1 (or the names given, as openssl's `subjectAltName`), made
 * with the openssl CLI; `dir` is removed by the caller.
 */
export function makeSelfSignedCertificate(subjectAltName = 'IP:127.0.0.1'): { dir: string; certFile: string; key: Buffer; cert: Buffer } {
  const dir = mkdtempSync(join(tmpdir(), 'report-sync-tls-'));
  const keyFile = join(dir, 'key.pem');
  const certFile = join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '2',
      '-subj',
      '/CN=report-sync test rig',
      '-addext',
      `subjectAltName=${subjectAltName}`,
    ],
    { stdio: 'ignore' },
  );
  return { dir, certFile, key: readFileSync(keyFile), cert: readFileSync(certFile) };
}

/**
 * HTTPS on a loopback port in front of a plain-HTTP server (the simulator): every request is
 * passed through as it came. Counts connections and the requests that got past the handshake.
 */
export async function startTlsFront(target: string, credentials: { key: Buffer; cert: Buffer }) {
  const targetUrl = new URL(target);
  let connections = 0;
  let requests = 0;
  const sockets = new Set<Socket>();
  const server = createServer({ key: credentials.key, cert: credentials.cert }, (req, res) => {
    requests += 1;
    const upstream = httpRequest(
      { host: targetUrl.hostname, port: targetUrl.port, method: req.method, path: req.url, headers: { ...req.headers, host: targetUrl.host } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  server.on('connection', (socket: Socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    origin: `https://127.0.0.1:${port}`,
    /** TCP connections opened to it, handshakes that failed included. */
    connections: () => connections,
    /** Requests that made it through a handshake. */
    requests: () => requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Removes what {@link makeSelfSignedCertificate} made. */
export function removeCertificate(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
