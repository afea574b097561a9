// Validates WGSL modules with Tint, the WGSL compiler of Dawn and Chrome (through the npm
// package `webgpu`, Dawn's Node bindings), on Dawn's null backend: no GPU is needed.
//
//   node validate.mjs PATH...
//
// A PATH is a `.wgsl` file or a directory, whose `.wgsl` files are validated in name order. All
// modules are validated in this one process. Each module is compiled (`createShaderModule`),
// then each `@compute` entry point is built into a pipeline, which checks what depends on
// the entry point. The null backend offers only WebGPU's default limits (256 invocations,
// 16 KiB of workgroup memory, 8 storage buffers), which tessera's kernels may exceed by
// declaring `limits(..)` (the macro checks those, the runtime checks the device): an entry
// point refused for a limit is counted, not reported as an error.
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

/** A device with every feature tessera's kernels may declare and the adapter's largest limits. */
async function device() {
  const adapter = await create(['backend=null']).requestAdapter();
  if (!adapter) throw new Error("Dawn's null backend offered no adapter");
  const requiredFeatures = ['shader-f16', 'subgroups'].filter((f) => adapter.features.has(f));
  const requiredLimits = {};
  for (const name of ['maxComputeInvocationsPerWorkgroup', 'maxComputeWorkgroupStorageSize',
    'maxComputeWorkgroupSizeX', 'maxComputeWorkgroupSizeY', 'maxComputeWorkgroupSizeZ',
    'maxStorageBuffersPerShaderStage', 'maxUniformBuffersPerShaderStage']) {
    requiredLimits[name] = adapter.limits[name];
  }
  return adapter.requestDevice({ requiredFeatures, requiredLimits });
}

/** The names of the module's compute entry points. */
function entryPoints(code) {
  return [...code.matchAll(/@compute\b[^;{]*?\bfn\s+([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]);
}

/** Entry points that only a device with more than the default limits could build. */
let beyondLimits = 0;

/** A pipeline error that names a device limit ("... exceeds the maximum ..."). */
function isLimit(message) {
  return /\bmaximum\b/.test(message);
}

/** The module's errors, as lines of text. */
async function validate(gpu, file, code) {
  gpu.pushErrorScope('validation');
  const module = gpu.createShaderModule({ code });
  const info = await module.getCompilationInfo();
  const scoped = await gpu.popErrorScope();
  const errors = info.messages
    .filter((m) => m.type === 'error')
    .map((m) => `${file}:${m.lineNum}:${m.linePos}: error: ${m.message}`);
  if (errors.length > 0 || scoped) {
    return errors.length > 0 ? errors : [`${file}: error: ${scoped.message}`];
  }
  for (const entryPoint of entryPoints(code)) {
    gpu.pushErrorScope('validation');
    gpu.createComputePipeline({ layout: 'auto', compute: { module, entryPoint } });
    const error = await gpu.popErrorScope();
    const message = error?.message.split('\n')[0].trim();
    if (message && isLimit(message)) beyondLimits += 1;
    else if (message) errors.push(`${file}: error: entry point \`${entryPoint}\`: ${message}`);
  }
  return errors;
}

async function main(paths) {
  if (paths.length === 0) {
    console.error('usage: node validate.mjs PATH... (.wgsl files or directories of them)');
    return 2;
  }
  const files = inputs(paths);
  const gpu = await device();
  let failed = 0;
  for (const file of files) {
    const errors = await validate(gpu, file, readFileSync(file, 'utf8'));
    if (errors.length > 0) failed += 1;
    errors.forEach((line) => console.log(line));
  }
  console.log(
    `tint: ${files.length} modules validated, ${failed} with errors; ` +
      `${beyondLimits} entry points need more than WebGPU's default limits (not built)`,
  );
  return failed > 0 ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error) => {
    console.error(`tint: could not validate: ${error.stack ?? error}`);
    process.exit(2);
  },
);
