// The snapshot's page table (61_snapshot_file.js): the runs of the heap image's pages that are not
// all zeros (`nonZeroRuns`), the table checked as read from the file (`checkRuns`), and an image
// restored by it into a memory (`restoreImage`): the runs read, the zero pages between them left
// untouched when they are zero already and zeroed when they are not.

import { assertEquals, checkRuns, IMAGE_PAGE, nonZeroRuns, restoreImage } from "./harness.js";

/** An image of `pages` pages (the last `tail` bytes long when given), non-zero where `marks` say. */
function image(pages, marks, tail = IMAGE_PAGE) {
  const bytes = new Uint8Array((pages - 1) * IMAGE_PAGE + tail);
  for (const [page, offset] of marks) bytes[page * IMAGE_PAGE + offset] = 7 + page;
  return bytes;
}

/** Restores `img` by its runs into a memory holding `garbage` everywhere; and the reads made. */
function restored(img, garbage) {
  const runs = nonZeroRuns(img);
  checkRuns(runs, img.length);
  const memory = new Uint8Array(img.length).fill(garbage);
  const reads = [];
  restoreImage(memory, runs, (at, bytes) => {
    reads.push([at, bytes.length]);
    bytes.set(img.subarray(at, at + bytes.length));
  });
  return { runs: Array.from(runs), memory, reads };
}

Deno.test("nonZeroRuns: the runs of pages holding anything but zeros, page-aligned, the last cut at the image's end", () => {
  assertEquals(Array.from(nonZeroRuns(image(6, []))), []);
  const img = image(8, [[1, 0], [2, IMAGE_PAGE - 1], [5, 17], [7, 3]], 100);
  assertEquals(Array.from(nonZeroRuns(img)), [
    IMAGE_PAGE,
    3 * IMAGE_PAGE,
    5 * IMAGE_PAGE,
    6 * IMAGE_PAGE,
    7 * IMAGE_PAGE,
    7 * IMAGE_PAGE + 100,
  ]);
  assertEquals(Array.from(nonZeroRuns(image(2, [[0, 0], [1, 0]]))), [0, 2 * IMAGE_PAGE]);
});

Deno.test("restoreImage: the memory ends up holding the image, whatever it held before", () => {
  const img = image(9, [[0, 5], [3, 0], [4, IMAGE_PAGE - 1], [8, 11]], 64);
  for (const garbage of [0, 0xff]) {
    const { memory, reads, runs } = restored(img, garbage);
    assertEquals(Array.from(memory), Array.from(img), `garbage ${garbage}`);
    // Only the runs are read: the zero pages cost no read.
    assertEquals(reads, [[0, IMAGE_PAGE], [3 * IMAGE_PAGE, 2 * IMAGE_PAGE], [8 * IMAGE_PAGE, 64]]);
    assertEquals(runs.length, 6);
  }
});

Deno.test("restoreImage: a zero page of the memory is not written (so never made resident)", () => {
  const img = image(4, [[1, 1]]);
  const memory = new Uint8Array(img.length);
  memory[3 * IMAGE_PAGE + 9] = 1; // written before the restore: must be zeroed
  const writes = [];
  const fill = memory.fill;
  memory.fill = function (value, from, to) {
    writes.push([from, to]);
    return fill.call(this, value, from, to);
  };
  restoreImage(memory, nonZeroRuns(img), (at, bytes) => bytes.set(img.subarray(at, at + bytes.length)));
  assertEquals(Array.from(memory), Array.from(img));
  assertEquals(writes, [[3 * IMAGE_PAGE, 4 * IMAGE_PAGE]]);
});

Deno.test("checkRuns: a table not ascending, overlapping, unaligned, empty-run or past the image is refused", () => {
  const length = 10 * IMAGE_PAGE;
  checkRuns(new Uint32Array([0, IMAGE_PAGE, 2 * IMAGE_PAGE, length]), length);
  checkRuns(new Uint32Array([]), length);
  for (
    const bad of [
      [2 * IMAGE_PAGE, 3 * IMAGE_PAGE, 0, IMAGE_PAGE],
      [0, 2 * IMAGE_PAGE, IMAGE_PAGE, 3 * IMAGE_PAGE],
      [1, IMAGE_PAGE],
      [IMAGE_PAGE, IMAGE_PAGE],
      [0, length + 1],
      [0],
    ]
  ) {
    let refused = null;
    try {
      checkRuns(new Uint32Array(bad), length);
    } catch (e) {
      refused = e.message;
    }
    assertEquals(refused, "the snapshot's page table is malformed", JSON.stringify(bad));
  }
});
