import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DiskStorage } from "../../src/files/disk.ts";

const scratch = mkdtempSync(join(tmpdir(), "actuate-disk-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const options = { contentType: "text/plain", maxBytes: 1024 };
async function* bytes(text: string) {
  yield new TextEncoder().encode(text);
}

describe("DiskStorage", () => {
  test("a delete removes the folders it leaves empty, up to the root and no further", async () => {
    const root = mkdtempSync(join(scratch, "root-"));
    // A root named with a trailing slash and a `.` segment is still where the climb stops.
    const disk = new DiskStorage(`${root}/./`);
    await disk.put("executions/e1/picture/cat.png", bytes("meow"), options);
    await disk.put("executions/e2/picture/dog.png", bytes("woof"), options);
    await disk.put("executions/e2/extra/notes.txt", bytes("notes"), options);

    await disk.delete("executions/e1/picture/cat.png");
    expect(readdirSync(join(root, "executions")).sort()).toEqual(["e2"]);
    await disk.delete("executions/e2/picture/dog.png");
    expect(readdirSync(join(root, "executions", "e2"))).toEqual(["extra"]);
    await disk.delete("executions/e2/extra/notes.txt");
    expect(readdirSync(root)).toEqual([]);
    expect(existsSync(root)).toBe(true);
    // Deleting what is not there changes nothing, and the root is kept.
    await disk.delete("executions/e3/nothing.txt");
    expect(existsSync(root)).toBe(true);
  });

  test("an upload into a folder that a delete is emptying at the same moment is never refused", async () => {
    const disk = new DiskStorage(mkdtempSync(join(scratch, "race-")));
    // The delete removes the folder between the upload's mkdir and its file's creation now and then
    // (within a few dozen rounds here, without the retry; mkdir itself may then fail with EEXIST, about
    // once in a thousand): the upload makes the folder again.
    for (let round = 0; round < 2_000; round++) {
      await disk.put(`f${round}/old.txt`, bytes("old"), options);
      const [deleted, uploaded] = await Promise.allSettled([
        disk.delete(`f${round}/old.txt`),
        disk.put(`f${round}/new.txt`, bytes("new"), options),
      ]);
      expect(deleted.status).toBe("fulfilled");
      expect(uploaded, `round ${round}`).toEqual({ status: "fulfilled", value: expect.objectContaining({ size: 3 }) });
      expect(await (await disk.get(`f${round}/new.txt`))?.file?.text()).toBe("new");
      // Its folder goes with it: nothing is left for the scratch folder's removal.
      await disk.delete(`f${round}/new.txt`);
    }
  }, 60_000);
});
