// Entry point of a simulator process of its own (see bench-simulator-process.ts): serves the
// bundled gateway simulator with the options given as JSON in argv[2] and prints where it listens
// as one JSON line. Commands on standard input, one per line: "reset" zeroes the counters and the
// CPU clock, "usage" prints the CPU time and counters since, "times" when each export request
// since arrived (ms since the epoch); when standard input closes it exits.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createGatewaySimulator, type GatewaySimulatorOptions } from '../../src/simulator/gateway-simulator.js';

const options = JSON.parse(process.argv[2] ?? '{}') as GatewaySimulatorOptions;
const simulator = await createGatewaySimulator({ ...options, port: 0 });
const cpuAtStart = process.cpuUsage();
process.stdout.write(`${JSON.stringify({ url: simulator.url, authUrl: simulator.authUrl, realm: simulator.realm, credentials: simulator.credentials })}\n`);
let cpuBase = cpuAtStart;
// How late the simulator's own event loop ran: a request's arrival is stamped when its handler runs.
const loopDelay = monitorEventLoopDelay({ resolution: 5 });
loopDelay.enable();
const usage = () => {
  const cpu = process.cpuUsage(cpuBase);
  const loop = { p99: loopDelay.percentile(99) / 1e6, max: loopDelay.max / 1e6 };
  return `${JSON.stringify({ cpuMs: (cpu.user + cpu.system) / 1000, counters: simulator.counters, loopDelayMs: loop })}\n`;
};
let pending = '';
process.stdin.on('data', (data: Buffer) => {
  pending += data.toString();
  let newline = pending.indexOf('\n');
  while (newline >= 0) {
    const command = pending.slice(0, newline).trim();
    pending = pending.slice(newline + 1);
    if (command === 'reset') {
      simulator.resetCounters();
      cpuBase = process.cpuUsage();
      loopDelay.reset();
      process.stdout.write('{"reset":true}\n');
    } else if (command === 'usage') {
      process.stdout.write(usage());
    } else if (command === 'times') {
      process.stdout.write(`${JSON.stringify(simulator.exportRequestTimes)}\n`);
    }
    newline = pending.indexOf('\n');
  }
});
process.stdin.on('end', () => {
  process.stdout.write(usage());
  void simulator.close().then(() => process.exit(0));
});
