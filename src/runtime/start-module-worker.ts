import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * Starts the worker thread whose module is `name` beside `here` (an `import.meta.url`): the compiled
 * `.js` file in `dist/`, as users run it; when `here` is itself TypeScript source (tests, `tsx`),
 * the module's `.ts` source is loaded through tsx.
 */
export function startModuleWorker(here: string, name: string, options: WorkerOptions): Worker {
  if (here.endsWith('.ts')) {
    const source = new URL(`./${name}.ts`, here).href;
    const boot = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(source)}); })`;
    return new Worker(boot, { ...options, eval: true });
  }
  return new Worker(new URL(`./${name}.js`, here), options);
}
