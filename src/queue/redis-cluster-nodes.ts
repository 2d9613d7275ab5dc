import { ConfigError } from '../errors/sync-error.js';

/** One node to start from, as ioredis's `Cluster` takes it. */
export interface ClusterNodeAddress {
  readonly host: string;
  readonly port: number;
}

/**
 * `REDIS_CLUSTER_NODES`: `host:port` entries separated by commas (`[::1]:7000` for IPv6; the port
 * is 6379 when left out). Only addresses: the password and TLS of every node come from REDIS_URL,
 * so an entry written as a URL is refused with a message saying where they go.
 * @throws ConfigError naming the entry to fix
 */
export function parseClusterNodes(text: string): ClusterNodeAddress[] {
  const entries = text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  if (entries.length === 0) throw new ConfigError('REDIS_CLUSTER_NODES names no node: list the cluster’s nodes as host:port, separated by commas');
  return entries.map(parseEntry);
}

function parseEntry(entry: string): ClusterNodeAddress {
  if (entry.includes('://') || entry.includes('@') || entry.includes('/')) {
    // Never quoted: an entry written as a URL may carry a password.
    throw new ConfigError(
      'REDIS_CLUSTER_NODES holds an entry that is not host:port (a URL, a password or a path): list only host:port; the password and rediss:// for TLS go in REDIS_URL',
    );
  }
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]\s]+))(?::(\d+))?$/.exec(entry);
  const port = match?.[3] === undefined ? 6379 : Number(match[3]);
  if (!match || !Number.isInteger(port) || port < 1 || port > 65_535) {
    throw new ConfigError(`REDIS_CLUSTER_NODES entry "${entry}" must look like host:port (e.g. 10.0.0.5:7000, or [::1]:7000 for IPv6)`);
  }
  return { host: match[1] ?? match[2]!, port };
}
