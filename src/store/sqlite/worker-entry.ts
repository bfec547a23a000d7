/**
 * The module of one of SQLite's worker threads, `<folder>/worker.ts` here. From source, beside this
 * file. In the compiled binary (`bun run build` lists each as an entrypoint) it is embedded under the
 * sources' common root, while this file's code sits in a shared chunk elsewhere, so a path relative to
 * this file would miss it (`test/process/binary.test.ts` starts both threads).
 */
export const workerEntry = (folder: "request-keys" | "checkpoints"): string =>
  import.meta.url.startsWith("file:///$bunfs/")
    ? `./store/sqlite/${folder}/worker.ts`
    : new URL(`./${folder}/worker.ts`, import.meta.url).href;
