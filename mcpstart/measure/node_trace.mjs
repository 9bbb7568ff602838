// The preload of a profiled Node.js start (measure/node_packages.py): given through
// NODE_OPTIONS as --import, so a launcher (npm exec, a shell) passes it on to the server's
// node. MCPSTART_NODE_TRACE names a folder; each node process appends tab-separated lines to
// PID.tsv there, times in ms since the epoch (performance.timeOrigin + performance.now()):
//   P  pid  time  ms since the process's time origin  entry URL    (the preload starts)
//   R  time  idle                                                  (the loader hooks run)
//   B  url  time  idle  /  E  url  time   a module's evaluation begins / ends (main thread):
//       an ES module by two statements added around its source by the load hook, a
//       CommonJS file by Module.prototype.load (read, compile and run, nested requires in)
//   S  method  url  time  idle          the main thread asks the loader thread to resolve
//       a specifier imported by url, or to load url (MessagePort.prototype.postMessage)
//   idle: the main thread's event loop's idle ms so far (performance.eventLoopUtilization():
//       time spent waiting in the loop's poll, as for the loader thread's answers; 0 before
//       the loop starts)
//   I  parent url  child url            an import edge (resolve hook, loader thread)
//   L  url  time                        an ES module's source is ready (load hook, loader
//       thread): its compile on the main thread starts at the earliest then
//   H  time  heapUsed  heapTotal  total_physical_size  external  arrayBuffers  rss
//       V8's heap figures in bytes (process.memoryUsage(), v8.getHeapStatistics()),
//       written on SIGUSR2 (mcpstart sends it once the server has answered)
// Loader hooks through module.register() (Node.js >= 20.6; they run on a thread of their
// own: Node.js docs, "Modules: node:module API", Customization Hooks). The load hook also
// adds `import "node:module"` to each ES module, so that every module, a leaf too, asks for a
// resolve as soon as it is compiled (the end of its compile, on the main thread).
import { openSync, writeSync } from 'node:fs';
import { isMainThread, MessagePort } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';
import * as modules from 'node:module';
import { getHeapStatistics } from 'node:v8';

const KEY = 'mcpstart.node.evaluate';
const folder = process.env.MCPSTART_NODE_TRACE;
const fd = folder ? openSync(`${folder}/${process.pid}.tsv`, 'a') : null;
const now = () => performance.timeOrigin + performance.now();
const put = (...fields) => { if (fd !== null) writeSync(fd, fields.join('\t') + '\n'); };
const idle = () => performance.eventLoopUtilization().idle;

if (isMainThread && fd !== null) {
  const entry = process.argv[1] ? pathToFileURL(process.argv[1]).href : '';
  put('P', process.pid, now(), performance.now(), entry);
  process.on('SIGUSR2', () => {  // a signal listener keeps no process alive
    const usage = process.memoryUsage();
    put('H', now(), usage.heapUsed, usage.heapTotal, getHeapStatistics().total_physical_size,
        usage.external, usage.arrayBuffers, usage.rss);
  });
  globalThis[Symbol.for(KEY)] = (edge, url) => (edge ? put('E', url, now())
    : put('B', url, now(), idle()));
  const load = modules.default.prototype.load;
  modules.default.prototype.load = function traced(filename) {
    const url = pathToFileURL(filename).href;
    put('B', url, now(), idle());
    try {
      return load.call(this, filename);
    } finally {
      put('E', url, now());
    }
  };
  const post = MessagePort.prototype.postMessage;
  MessagePort.prototype.postMessage = function traced(message, ...rest) {
    if (message?.method === 'resolve' || message?.method === 'load') {
      put('S', message.method, message.args[message.method === 'resolve' ? 1 : 0] ?? '', now(),
          idle());
    }
    return post.call(this, message, ...rest);
  };
  if (modules.register) {  // absent before Node.js 20.6: no R line, no ES module timed
    modules.register(import.meta.url);
    put('R', now(), idle());
  }
}

export async function resolve(specifier, context, next) {
  const found = await next(specifier, context);
  if (context.parentURL) put('I', context.parentURL, found.url);
  return found;
}

export async function load(url, context, next) {
  const found = await next(url, context);
  if (found.format !== 'module' || found.source == null) return found;
  let text = typeof found.source === 'string' ? found.source
    : new TextDecoder().decode(found.source);
  const call = `globalThis[Symbol.for(${JSON.stringify(KEY)})]?.`;
  // On the first line (after a hashbang), so that line numbers stay the source's.
  const head = text.startsWith('#!') ? (text.indexOf('\n') + 1 || text.length) : 0;
  text = `${text.slice(0, head)}import"node:module";${call}(0,import.meta.url);${text.slice(head)}`
    + `\n;${call}(1,import.meta.url);\n`;
  put('L', url, now());
  return { ...found, source: text };
}
