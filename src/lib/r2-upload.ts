/**
 * Writes an R2 object whose length is not known in advance (a download without
 * Content-Length, an error report assembled from pages) with bounded memory: the bytes are
 * gathered into one part of PART_BYTES; an object that fits in one part is one put, a larger
 * one a multipart upload of equal parts (R2 wants every part but the last the same size, and
 * at least 5 MiB).
 */
export const PART_BYTES = 8 * 1024 * 1024;

export class R2Upload {
  private buffer: Uint8Array;
  private filled = 0;
  private multipart: R2MultipartUpload | undefined;
  private readonly parts: R2UploadedPart[] = [];
  /** Bytes written so far. */
  size = 0;

  constructor(
    private readonly bucket: R2Bucket,
    readonly key: string,
    private readonly options: R2PutOptions & R2MultipartOptions = {},
    private readonly partBytes = PART_BYTES,
  ) {
    this.buffer = new Uint8Array(partBytes);
  }

  async write(bytes: Uint8Array): Promise<void> {
    this.size += bytes.length;
    let from = 0;
    while (from < bytes.length) {
      const take = Math.min(bytes.length - from, this.partBytes - this.filled);
      this.buffer.set(bytes.subarray(from, from + take), this.filled);
      this.filled += take;
      from += take;
      if (this.filled === this.partBytes) await this.flushPart();
    }
  }

  private async flushPart(): Promise<void> {
    this.multipart ??= await this.bucket.createMultipartUpload(this.key, this.options);
    this.parts.push(await this.multipart.uploadPart(this.parts.length + 1, this.buffer.subarray(0, this.filled)));
    this.filled = 0;
  }

  /** Stores what was written; an empty upload stores an empty object. */
  async close(): Promise<void> {
    if (!this.multipart) {
      await this.bucket.put(this.key, this.buffer.subarray(0, this.filled), this.options);
    } else {
      if (this.filled > 0) await this.flushPart();
      await this.multipart.complete(this.parts);
    }
    this.buffer = new Uint8Array(0);
  }

  async abort(): Promise<void> {
    await this.multipart?.abort();
    this.buffer = new Uint8Array(0);
  }
}
