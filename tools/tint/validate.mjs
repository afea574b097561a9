// Validates WGSL modules with Tint, the WGSL compiler of Dawn and Chrome (through the npm
// package `webgpu`, Dawn's Node bindings), on Dawn's null backend: no GPU is needed.
//
//   node validate.mjs PATH...
//
// A PATH is a `.wgsl` file or a directory, whose `.wgsl` files are validated in name order. All
// modules are validated in this one process, each by `createShaderModule` (Tint parses,
// resolves and validates the whole module). Pipelines are not built: the null backend offers
// only WebGPU's default limits, which tessera's kernels may exceed by declaring `limits(..)`
// (the macro checks those, the runtime checks the device), and building them was slow and
// made dawn.node hang.
//
// Prints `FILE:LINE:COLUMN: error: MESSAGE` for every error and a last line counting the
// modules; exits with 1 when any module has an error, 2 when validation could not run.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { create, globals } from 'webgpu';

Object.assign(globalThis, globals);

/** The `.wgsl` files named by the arguments, directories expanded. */
function inputs(paths) {
  return paths.flatMap((path) =>
    statSync(path).isDirectory()
      ? readdirSync(path).filter((name) => name.endsWith('.wgsl')).sort().map((name) => join(path, name))
      : [path],
  );
}

/**
 * Awaited calls made on one device. dawn.node (webgpu 0.6.2) hangs or crashes after about 32
 * awaited calls on one adapter (seen on Linux x64, whatever the calls), so a fresh adapter and
 * device take over before that.
 */
const CALLS_PER_DEVICE = 16;

/** A device with every feature tessera's kernels may declare, renewed as it wears out. */
class Devices {
  constructor() {
    this.gpu = create(['backend=null']);
    this.device = null;
    this.calls = CALLS_PER_DEVICE;
  }

  /** A device with room for `calls` more awaited calls. */
  async with(calls) {
    if (this.calls + calls > CALLS_PER_DEVICE) {
      this.device?.destroy();
      const adapter = await this.gpu.requestAdapter();
      if (!adapter) throw new Error("Dawn's null backend offered no adapter");
      const requiredFeatures = ['shader-f16', 'subgroups'].filter((f) => adapter.features.has(f));
      this.device = await adapter.requestDevice({ requiredFeatures });
      this.calls = 0;
    }
    this.calls += calls;
    return this.device;
  }
}

/** The module's errors, as lines of text. */
async function validate(devices, file, code) {
  const device = await devices.with(2);
  device.pushErrorScope('validation');
  const module = device.createShaderModule({ code });
  const info = await module.getCompilationInfo();
  const scoped = await device.popErrorScope();
  const errors = info.messages
    .filter((m) => m.type === 'error')
    .map((m) => `${file}:${m.lineNum}:${m.linePos}: error: ${m.message}`);
  if (errors.length === 0 && scoped) errors.push(`${file}: error: ${scoped.message}`);
  return errors;
}

async function main(paths) {
  if (paths.length === 0) {
    console.error('usage: node validate.mjs PATH... (.wgsl files or directories of them)');
    return 2;
  }
  const files = inputs(paths);
  const devices = new Devices();
  let failed = 0;
  for (const file of files) {
    const errors = await validate(devices, file, readFileSync(file, 'utf8'));
    if (errors.length > 0) failed += 1;
    errors.forEach((line) => console.log(line));
  }
  console.log(`tint: ${files.length} modules validated, ${failed} with errors`);
  return failed > 0 ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error) => {
    console.error(`tint: could not validate: ${error.stack ?? error}`);
    process.exit(2);
  },
);
