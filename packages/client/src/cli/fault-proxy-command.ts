import { type Command, InvalidArgumentError } from 'commander';
import { FAULT_KINDS, type FaultKind, randomPlan } from '../fault-proxy/fault-plan.js';
import { startFaultProxy } from '../fault-proxy/fault-proxy.js';
import { positiveNumber } from './positive-number.js';

/** A fault proxy for customers testing their own consumer: random faults with a seed. */
export function registerFaultProxyCommand(program: Command): void {
  program
    .command('fault-proxy')
    .description('Run a loopback proxy in front of a service that injects the faults a consumer must survive')
    .requiredOption('--target <origin>', 'service origin, e.g. http://127.0.0.1:3000')
    .option('--port <port>', 'port to listen on', positiveNumber('--port'), 0)
    .option('--seed <n>', 'random seed', Number, 1)
    .option('--rate <share>', 'share of requests that get a fault (0 to 1)', Number, 0.2)
    .option('--kinds <list>', `comma-separated subset of: ${FAULT_KINDS.join(', ')}`)
    .action(async (flags: { target: string; port: number; seed: number; rate: number; kinds?: string }) => {
      const kinds = flags.kinds?.split(',').map((k) => k.trim()) as FaultKind[] | undefined;
      for (const k of kinds ?? []) if (!FAULT_KINDS.includes(k)) throw new InvalidArgumentError(`unknown fault ${k}`);
      const proxy = await startFaultProxy({
        target: flags.target,
        port: flags.port,
        plan: randomPlan({ seed: flags.seed, rate: flags.rate, kinds }),
      });
      process.stdout.write(`fault proxy on ${proxy.url} -> ${flags.target}\n`);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await proxy.close();
      process.stdout.write(`${JSON.stringify({ requests: proxy.requests, injected: proxy.injected })}\n`);
    });
}
