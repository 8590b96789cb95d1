// Object storage for catalog artwork. Keys are content-addressed (derived from the bytes), so an object
// never changes once written and can be cached forever.

export interface StoredObject {
  body: Buffer;
  contentType: string;
}

export interface ObjectStorage {
  /** Writes the object unless it already exists (same key, same bytes). */
  put(key: string, body: Buffer, contentType: string): Promise<void>;
  get(key: string): Promise<StoredObject | null>;
  exists(key: string): Promise<boolean>;
  /** Removes the object; removing an absent key is not an error. */
  delete(key: string): Promise<void>;
  /** Where a client fetches the object: an absolute URL, or a path served by the API itself (file driver). */
  publicUrl(key: string): string;
}
