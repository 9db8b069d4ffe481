// Capped reads of regular files: probes never read more than they need, and never block on a FIFO or device.

import { close, constants, fstat, open, read } from '../../lib/fs.ts';

/**
 * Reads at most `maxBytes` from the start of a regular file; anything else (a FIFO, socket, device or
 * directory) is refused with "not a regular file". O_NONBLOCK makes opening a FIFO return at once
 * (it is then refused), and has no effect on regular files. Files in /proc report size 0, so this reads until
 * EOF or the cap rather than trusting the size.
 */
export async function readHead(path: string, maxBytes: number): Promise<Buffer> {
  const fd = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    if (!(await fstat(fd)).isFile()) throw new Error('not a regular file');
    const buffer = Buffer.alloc(maxBytes);
    let length = 0;
    while (length < maxBytes) {
      const { bytesRead } = await read(fd, buffer, length, maxBytes - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    return buffer.subarray(0, length);
  } finally {
    await close(fd);
  }
}
