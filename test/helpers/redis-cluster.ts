import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { freePort } from './free-port.js';

const run = promisify(execFile);

/** One redis-server of the cluster. */
export interface ClusterNode {
  readonly port: number;
  /** `127.0.0.1:port`, as REDIS_CLUSTER_NODES and CLUSTER NODES name it. */
  readonly address: string;
}

/** A node as CLUSTER NODES describes it. */
export interface ClusterNodeInfo {
  readonly id: string;
  readonly address: string;
  readonly role: 'master' | 'replica';
  /** The master's id, for a replica. */
  readonly masterId: string | undefined;
  /** Slot ranges held, for a master (`[0, 5460]`…). */
  readonly slots: readonly (readonly [number, number])[];
}

/**
 * A Redis Cluster of the test's own: three masters with a replica each, on free loopback ports
 * (client and bus ports both picked by the OS), no persistence, made with `redis-cli --cluster
 * create` as an operator would. The caller must `destroy()` it, also when a test fails: it kills
 * all six servers and removes their folder.
 */
export async function startRedisCluster(): Promise<RedisCluster> {
  try {
    return await startOnce();
  } catch (error) {
    // A port picked free can be taken by another process before its server binds it: once more.
    if (!(error instanceof PortTaken)) throw error;
    return startOnce();
  }
}

class PortTaken extends Error {}

/** Free loopback ports, none twice (the OS may hand a port out again once it was closed). */
async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

async function startOnce(): Promise<RedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'report-sync-redis-cluster-'));
  const children: ChildProcess[] = [];
  const byPort = new Map<number, { child: ChildProcess; exited: Promise<void> }>();
  const exited: Promise<void>[] = [];
  let output = '';
  const destroy = async (): Promise<void> => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await Promise.all(exited);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const nodes: ClusterNode[] = [];
    const ports = await distinctFreePorts(12);
    for (let i = 0; i < 6; i++) {
      const port = ports[2 * i]!;
      const busPort = ports[2 * i + 1]!;
      // A folder each: a replica's full sync goes through an RDB file, named alike on every node.
      const nodeDir = join(dir, String(port));
      mkdirSync(nodeDir);
      // prettier-ignore
      const args = [
        '--port', String(port), '--cluster-enabled', 'yes', '--cluster-port', String(busPort),
        '--cluster-config-file', join(nodeDir, `nodes-${port}.conf`), '--cluster-node-timeout', '5000',
        '--save', '', '--appendonly', 'no', '--bind', '127.0.0.1', '--dir', nodeDir, '--daemonize', 'no',
      ];
      const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
      children.push(child);
      const gone = new Promise<void>((resolve) => child.on('exit', () => resolve()));
      exited.push(gone);
      byPort.set(port, { child, exited: gone });
      child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
      nodes.push({ port, address: `127.0.0.1:${port}` });
    }
    for (const node of nodes) {
      await waitFor(
        async () => (await cli(node, 'PING')).trim() === 'PONG',
        `redis-server on ${node.address} did not start:\n${output}`,
        20_000,
        () => (output.includes('Address already in use') ? new PortTaken(output) : undefined),
      );
    }
    await run('redis-cli', ['--cluster', 'create', ...nodes.map((node) => node.address), '--cluster-replicas', '1', '--cluster-yes']);
    for (const node of nodes) {
      await waitFor(async () => (await cli(node, 'CLUSTER', 'INFO')).includes('cluster_state:ok'), `${node.address} never reached cluster_state:ok`);
    }
    // Every node must know every other one's role before a failover can be asked of a replica.
    for (const node of nodes) {
      await waitFor(async () => {
        const described = parseClusterNodes(await cli(node, 'CLUSTER', 'NODES'));
        return described.length === 6 && described.filter((info) => info.role === 'replica' && info.masterId).length === 3;
      }, `${node.address} never saw three masters with a replica each`);
    }
    // A replica that has not finished its first sync could not take over without losing writes.
    for (const node of nodes) {
      await waitFor(async () => {
        const replication = await cli(node, 'INFO', 'replication');
        return replication.includes('role:master') || replication.includes('master_link_status:up');
      }, `${node.address} never finished its first sync with its master`);
    }
    const kill = async (port: number): Promise<void> => {
      const server = byPort.get(port)!;
      if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
      await server.exited;
    };
    return new RedisCluster(nodes, { destroy, kill });
  } catch (error) {
    await destroy();
    throw error;
  }
}

/** A started cluster; see {@link startRedisCluster}. */
export class RedisCluster {
  readonly #kill: (port: number) => Promise<void>;
  /** Kills all six servers and removes their folder. */
  readonly destroy: () => Promise<void>;

  constructor(
    readonly nodes: readonly ClusterNode[],
    control: { readonly destroy: () => Promise<void>; readonly kill: (port: number) => Promise<void> },
  ) {
    this.destroy = control.destroy;
    this.#kill = control.kill;
  }

  /** REDIS_CLUSTER_NODES naming the first three nodes (the rest are discovered). */
  get clusterNodes(): string {
    return this.nodes
      .slice(0, 3)
      .map((node) => node.address)
      .join(',');
  }

  /** The environment a report-sync process needs to use this cluster. */
  get env(): Record<string, string> {
    return { REDIS_URL: `redis://${this.nodes[0]!.address}`, REDIS_CLUSTER_NODES: this.clusterNodes };
  }

  /** Runs redis-cli against one node; resolves to its output. */
  cli(node: ClusterNode, ...args: string[]): Promise<string> {
    return cli(node, ...args);
  }

  /** The cluster as one node describes it. */
  async describe(node: ClusterNode = this.nodes[0]!): Promise<ClusterNodeInfo[]> {
    return parseClusterNodes(await cli(node, 'CLUSTER', 'NODES'));
  }

  /** The master holding the slot of `key` (a hash tag such as `{report-sync}` is enough) and its replica. */
  async holderOf(key: string): Promise<{ master: ClusterNodeInfo; replica: ClusterNodeInfo }> {
    const slot = Number((await cli(this.nodes[0]!, 'CLUSTER', 'KEYSLOT', key)).trim());
    const described = await this.describe();
    const master = described.find((info) => info.role === 'master' && info.slots.some(([from, to]) => slot >= from && slot <= to));
    const replica = described.find((info) => info.role === 'replica' && info.masterId === master?.id);
    if (!master || !replica) throw new Error(`no master with a replica holds slot ${slot} of ${key}:\n${JSON.stringify(described)}`);
    return { master, replica };
  }

  /**
   * A manual failover of the master holding `key`'s slot (CLUSTER FAILOVER on its replica, which
   * waits for the replica to catch up): resolves once every node sees the replica as the master.
   * @returns the addresses of the old master and the new one
   */
  async failOver(key: string): Promise<{ from: string; to: string }> {
    const { master, replica } = await this.holderOf(key);
    const node = this.nodes.find((candidate) => candidate.address === replica.address)!;
    const answer = (await cli(node, 'CLUSTER', 'FAILOVER')).trim();
    if (answer !== 'OK') throw new Error(`CLUSTER FAILOVER on ${replica.address} answered ${answer}`);
    for (const each of this.nodes) {
      await waitFor(async () => {
        const described = parseClusterNodes(await cli(each, 'CLUSTER', 'NODES'));
        return described.find((info) => info.id === replica.id)?.role === 'master' && described.find((info) => info.id === master.id)?.role === 'replica';
      }, `${each.address} never saw ${replica.address} take over from ${master.address}`);
    }
    return { from: master.address, to: replica.address };
  }

  /**
   * Kills the master holding `key`'s slot (SIGKILL, as a crash), and resolves once the other nodes
   * have elected its replica, after cluster-node-timeout.
   * @returns the addresses of the dead master and the new one
   */
  async crash(key: string): Promise<{ from: string; to: string }> {
    const { master, replica } = await this.holderOf(key);
    const masterNode = this.nodes.find((candidate) => candidate.address === master.address)!;
    const survivor = this.nodes.find((candidate) => candidate.address === replica.address)!;
    // The crash of a master whose replica holds its data: on a loaded machine the link can drop
    // and the replica start a full sync again, and taking over in the middle of it would leave
    // the slots empty, which is another test.
    await waitFor(async () => {
      const [fromMaster, fromReplica] = await Promise.all([cli(masterNode, 'INFO', 'replication'), cli(survivor, 'INFO', 'replication')]);
      const written = Number(/master_repl_offset:(\d+)/.exec(fromMaster)?.[1]);
      const copied = Number(/slave_repl_offset:(\d+)/.exec(fromReplica)?.[1]);
      return fromReplica.includes('master_link_status:up') && fromReplica.includes('master_sync_in_progress:0') && copied >= written;
    }, `${replica.address} never caught up with ${master.address}`);
    await this.#kill(masterNode.port);
    await waitFor(
      async () => parseClusterNodes(await cli(survivor, 'CLUSTER', 'NODES')).find((info) => info.id === replica.id)?.role === 'master',
      `${replica.address} never took over from the dead ${master.address}`,
      30_000,
    );
    return { from: master.address, to: replica.address };
  }
}

async function cli(node: ClusterNode, ...args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(node.port), ...args]);
  return stdout;
}

async function waitFor(condition: () => Promise<boolean>, failure: string, timeoutMs = 20_000, hopeless?: () => Error | undefined): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await condition()) return;
    } catch {
      // Not answering yet: ask again.
    }
    const reason = hopeless?.();
    if (reason) throw reason;
    if (Date.now() > deadline) throw new Error(failure);
    await sleep(50);
  }
}

/** CLUSTER NODES: `<id> <ip:port@bus> <flags> <master> <ping> <pong> <epoch> <link> <slot>...` per line. */
function parseClusterNodes(text: string): ClusterNodeInfo[] {
  return text
    .trim()
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const [id, address, flags, masterId, , , , , ...slots] = line.trim().split(' ');
      const roles = flags!.split(',');
      return {
        id: id!,
        address: address!.split('@')[0]!,
        role: roles.includes('master') ? 'master' : 'replica',
        masterId: masterId === '-' ? undefined : masterId,
        slots: slots
          .filter((slot) => !slot.startsWith('['))
          .map((slot) => {
            const [from, to] = slot.split('-').map(Number);
            return [from!, to ?? from!] as const;
          }),
      };
    });
}
