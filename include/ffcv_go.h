/*
 * ffcv_go.h — the C ABI of libffcv_go, the only contract between the Go core
 * and its callers (the Python package binds it with ctypes).
 *
 * Conventions
 *  - Objects are opaque int64 handles (> 0); Go pointers never cross.
 *  - Every call that can fail takes `char **err` last. On failure it returns a
 *    negative value and sets *err to a NUL-terminated message the caller frees
 *    with ffcv_free. On success *err is left untouched.
 *  - Calls may block (ffcv_iter_next, ffcv_writer_put); they never call back
 *    into the caller except through DLPack deleters.
 *  - Go panics are recovered at this boundary and reported as errors
 *    (FFCV_ERR_INTERNAL); in a DLPack deleter, which cannot fail, they are
 *    reported on stderr.
 *  - Handles are checked: a stale, closed or wrong-kind handle is an error.
 *    Every call holds a reference to its handle while it runs: ffcv_close from
 *    another thread first stops the object (a blocked ffcv_iter_next returns),
 *    then waits for the calls in flight before freeing it, so a concurrent
 *    close never unmaps memory under a running call.
 *  - JSON arguments reject keys they do not declare (FFCV_ERR_ARGUMENT).
 *  - The Go runtime does not survive fork(): a child process must not call
 *    this library (use the 'spawn' start method). DLPack deleters run in a
 *    forked child only free their C structs.
 */
#ifndef FFCV_GO_H
#define FFCV_GO_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version of this ABI: raised whenever a signature, a struct, an error code or
 * a JSON key changes meaning. Callers compare it with ffcv_abi_version(). */
#define FFCV_GO_ABI_VERSION 4

/* Error codes: every call that can fail returns one of these (negative), with
 * a message in *err. */
#define FFCV_ERR_INTERNAL  (-1) /* a bug or an unexpected condition */
#define FFCV_ERR_ARGUMENT  (-2) /* bad arguments, spec or handle */
#define FFCV_ERR_FORMAT    (-3) /* malformed, truncated or corrupt file */
#define FFCV_ERR_IO        (-4) /* operating system error */
#define FFCV_ERR_NOT_FOUND (-5) /* no such file */
#define FFCV_ERR_DATA      (-6) /* a sample's content cannot be used (bad image, wrong size, ...) */

/* ---- DLPack (v0.8 ABI), declared here so no other header is needed ---- */
typedef struct { int32_t device_type; int32_t device_id; } ffcv_DLDevice;      /* 1 = CPU */
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } ffcv_DLDataType; /* 0 int, 1 uint, 2 float, 6 bool */
typedef struct {
  void *data;
  ffcv_DLDevice device;
  int32_t ndim;
  ffcv_DLDataType dtype;
  int64_t *shape;
  int64_t *strides; /* NULL: compact row-major */
  uint64_t byte_offset;
} ffcv_DLTensor;
typedef struct ffcv_DLManagedTensor {
  ffcv_DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct ffcv_DLManagedTensor *self);
} ffcv_DLManagedTensor;

/* One field value handed to the writer. Data is copied before the call returns. */
typedef struct {
  int64_t i;          /* IntField */
  double f;           /* FloatField */
  const void *data;   /* payload: bytes, JSON text (no NUL), array bytes, pixels or image file */
  uint64_t len;
  int32_t width, height, channels; /* raw image pixels, HWC uint8 */
  int32_t encoded;    /* 1: data is an image file (JPEG, PNG, GIF); 2: data is the
                         UTF-8 path of one, read by the writer's worker */
  /* VideoField (type 103): data holds T frames of width x height x channels pixels
   * back to back, or (encoded 2) the paths of T image files separated by NUL bytes;
   * f is the frame rate (0: unknown). */
  /* AudioField (type 104): an audio file's bytes (encoded 1) or path (encoded 2),
   * or the samples of a (channels, frames) C-order array with i the sample rate,
   * channels, and width the sample format (1 int16, 2 int32, 3 float32); or a
   * clip ffcv_audio_encode made: column its 32-byte metadata, data its bytes. */
  /* Custom fields (type 255, encoded by the field's Python encode()): the metadata
   * column bytes, and where in them the writer stores data's file offset (-1: no
   * heap data). */
  const void *column;
  uint64_t column_len;
  int64_t ptr_offset;
} ffcv_value;

/* One span of a loader's trace (ffcv_loader_trace). */
typedef struct {
  int64_t start_ns; /* CLOCK_MONOTONIC (Python's time.monotonic_ns()) */
  int64_t dur_ns;
  uint64_t arg;     /* the sample id; a page read's page number; batch operations' batch */
  int32_t track;    /* the worker (0, 1, ...) or FFCV_TRACK_* */
  int32_t stage;    /* FFCV_STAGE_* */
} ffcv_trace_event;

/* Stages of ffcv_trace_event and of ffcv_loader_stats' "stages". A worker's
 * sample is read (the cache lookup, waiting for a process-cache page, the copy
 * out of the map where the OS cache's page faults land), entropy-decoded (JPEG
 * Huffman decoding, which alternates with the IDCT MCU by MCU: its span is
 * their sum, laid before the rest), decoded and resized (IDCT, upsampling,
 * colour conversion, crop and resize; other fields' decoders), then the
 * built-in operations after the decoder run. */
#define FFCV_STAGE_READ      0 /* "read" */
#define FFCV_STAGE_ENTROPY   1 /* "entropy_decode" */
#define FFCV_STAGE_DECODE    2 /* "idct_resize" */
#define FFCV_STAGE_OPS       3 /* "ops" */
#define FFCV_STAGE_PAGE_READ 4 /* "page_read": a process-cache page read, track FFCV_TRACK_PAGES */
#define FFCV_STAGE_BATCH_OPS 5 /* "batch_ops": a batch's batch operations, track FFCV_TRACK_BATCH */
#define FFCV_TRACK_PAGES (-1)
#define FFCV_TRACK_BATCH (-2)

/* One column of an Arrow record batch handed to ffcv_ingest_push, one per field:
 * pyarrow's own buffers, read in place during the call. Row r is element
 * offset + r of the array (for a list column, the list of values there). */
#define FFCV_COLUMN_BINARY       0 /* bytes or UTF-8 (binary, string): int32 offsets */
#define FFCV_COLUMN_LARGE_BINARY 1 /* the same with int64 offsets (large_binary, large_string) */
#define FFCV_COLUMN_INT64        2
#define FFCV_COLUMN_FLOAT64      3
typedef struct {
  int32_t kind;                   /* FFCV_COLUMN_* of the values */
  int32_t list;                   /* 0: a value per row; 32 or 64: a list of values per row
                                     (list, large_list) with offsets of that width */
  int64_t offset;                 /* the array's offset */
  const uint8_t *validity;        /* the rows' validity bitmap (LSB first); NULL: all valid */
  const void *list_offsets;       /* list columns: each row's first value, and one past the last */
  int64_t values_offset;          /* list columns: the values array's offset */
  const uint8_t *values_validity; /* list columns: the values' bitmap; NULL: all valid */
  const void *offsets;            /* binary values: their offsets into data */
  const void *data;               /* the bytes of binary values; int64 or float64 values */
  uint64_t data_len;              /* bytes at data */
  /* A TextField with tokens: the ids of every caption of the column, in row and list
   * order: caption k's are tokens[token_offsets[k] .. token_offsets[k+1]]. Else NULL. */
  const uint64_t *token_offsets;
  const uint32_t *tokens;
  uint64_t n_tokens;
} ffcv_column;

#ifndef FFCV_GO_TYPES_ONLY /* the Go side includes the types only */

/* ---- general ---- */

/* Library version string; static, do not free. */
const char *ffcv_version(void);
/* FFCV_GO_ABI_VERSION of the header the library was built with. */
int64_t ffcv_abi_version(void);
/* Frees a string or buffer returned by this library. NULL is fine. */
void ffcv_free(void *p);
/* Closes any handle (reader, writer, loader, iterator). Closing twice is an error.
 * Closing a writer handle abandons the write, as ffcv_writer_abort does. Closing a
 * reader invalidates the map ffcv_reader_mmap and ffcv_reader_read returned. */
int64_t ffcv_close(int64_t handle, char **err);
/* Number of live handles, of batch slots held by callers and of process-cache page
 * buffers mapped (for leak checks). */
int64_t ffcv_live_objects(void);
/* Number of goroutines (for leak checks: a closed loader leaves none behind; idle
 * OS threads, which the Go runtime keeps, say nothing about leaks). */
int64_t ffcv_goroutines(void);

/* ---- reading ---- */

/* Opens a dataset: paths_json is a JSON list of .beton files, directories (their
 * *.beton files, sorted), globs (sorted matches), s3://, http:// and https:// URLs,
 * and S3 prefixes (s3://bucket/dir/) and patterns (sorted matches). One file is read
 * as itself (a local one mapped); several are shards with one set of fields read as
 * one dataset, sample indices in shard order. custom_json: {"field name": [column
 * size, column alignment], ...} for custom fields (type_id 255), or NULL. Returns a
 * reader handle. */
int64_t ffcv_dataset_open(const char *paths_json, const char *custom_json, char **err);
/* The files paths_json (as for ffcv_dataset_open) names, as a JSON list in *out
 * (freed with ffcv_free). Returns their count. */
int64_t ffcv_dataset_paths(const char *paths_json, char **out, char **err);
/* Opens a mixture of datasets read as one (see docs/guides/mixtures.md). spec_json:
 * {"sources": [{"name", "paths" (as for ffcv_dataset_open), at most one of
 * "proportion", "repeat", "choose", "rename": {stored: name}, "drop": [stored]}],
 * "weights" (relative, normalized; not with per-source weights), "epoch_size",
 * "source_field" (an IntField added with each sample's source index, "" for none)}.
 * Samples are numbered source by source. *out (freed with ffcv_free): JSON
 * {"sources": [{"name", "files", "start", "samples", "take" (samples per epoch),
 * "first_page", "end_page"}]}. Returns a reader handle; a loader created on it
 * ("reader" in its spec) draws its epochs from the sources by their takes. */
int64_t ffcv_mixture_open(const char *spec_json, char **out, char **err);
/* JSON list of the fields of the file at path [{name, type_id, shape, dtype, args_hex}],
 * from its header and descriptors only (to learn the custom fields' layouts before
 * ffcv_dataset_open). *out is freed with ffcv_free. */
int64_t ffcv_file_fields(const char *path, char **out, char **err);
/* JSON description: num_samples, page_size, alloc_table_ptr, metadata_offset, row_size,
 * fields [{name, type_id, offset, size, shape, dtype, args_hex}], mapped (heap bytes
 * readable through the map), shards [{path, num_samples}]. *out is freed with ffcv_free. */
int64_t ffcv_reader_info(int64_t reader, char **out, char **err);
/* The allocation index: distinct allocation pointers, sorted, with the size the
 * reader resolves for each (an empty allocation sharing its pointer with the next
 * loses to it). Writes up to cap entries into ptrs and sizes (both NULL: count
 * only); returns the count. */
int64_t ffcv_reader_allocs(int64_t reader, uint64_t *ptrs, uint64_t *sizes, uint64_t cap, char **err);
/* The page maps of FFCV's memory managers: the distinct (sample id, page) pairs of
 * the allocation table, sorted by sample then page, where an allocation's page is
 * the one its pointer starts on (pointer / page_size). Writes up to cap pairs into
 * samples and pages (both NULL: count only); returns the count. */
int64_t ffcv_reader_alloc_pages(int64_t reader, uint64_t *samples, uint64_t *pages, uint64_t cap, char **err);
/* The metadata and allocation tables (NULL when empty): valid until the reader is closed. */
int64_t ffcv_reader_tables(int64_t reader, void **meta, uint64_t *meta_len, void **allocs,
                           uint64_t *allocs_len, char **err);
/* The mapped file (shards: their address space, each file at its base): valid until
 * the reader is closed. Fails for a reader without a map. */
int64_t ffcv_reader_mmap(int64_t reader, void **data, uint64_t *len, char **err);
/* Field `field` of sample `sample`: its metadata column and heap bytes (NULL/0 for
 * Int/Float), as pointers into the map, bounds-checked against the file. */
int64_t ffcv_reader_read(int64_t reader, uint64_t sample, int32_t field,
                         const void **col, uint64_t *col_len,
                         const void **heap, uint64_t *heap_len, char **err);

/* Reads every sample (decoding images fully) with `workers` threads (< 1: all CPUs).
 * *out: JSON list of {sample, field, error}, in sample order. Returns the count. */
int64_t ffcv_verify(int64_t reader, int32_t workers, char **out, char **err);

/* ---- writing ---- */


/* Starts writing. spec_json: {"num_samples": N, "page_size": P, "num_workers": W,
 * "fields": [{"name", "type_id", "shape", "dtype", "write_mode", "max_resolution",
 * "smart_threshold", "jpeg_quality", "compress_probability"}]}; target fields
 * (type_id 100 RaggedArray, 101 Mask) add "follows", "coords" and "encoding",
 * "shape" being a ragged field's row shape; a video field (type_id 103) takes
 * "max_resolution" and "jpeg_quality".
 * path is a local file or an s3:// URL (written to a local temporary file, uploaded
 * by ffcv_writer_finish). The file appears at path only when ffcv_writer_finish
 * succeeds. */
int64_t ffcv_writer_create(const char *path, const char *spec_json, char **err);
/* Queues samples first .. first+count-1; values holds count * num_fields entries,
 * sample-major. Samples must be put in order. Blocks while the encoders are behind. */
int64_t ffcv_writer_put(int64_t writer, uint64_t first, uint64_t count,
                        const ffcv_value *values, char **err);
/* Finishes the file and renames it into place; the handle is closed either way. */
int64_t ffcv_writer_finish(int64_t writer, char **err);
/* Abandons the write, removing the temporary file; the handle is closed. */
int64_t ffcv_writer_abort(int64_t writer, char **err);
/* Scans an ImageFolder tree (class folders of image files, labels by sorted folder
 * name). *out is JSON {"classes": [...], "files": [...], "labels": [...]}. */
int64_t ffcv_scan_image_folder(const char *root, char **out, char **err);
/* Reads a YOLO (Ultralytics) dataset's split. spec_json: {"yaml": the dataset YAML,
 * "split": "train", "val" or "test", "task": "detect", "segment" or "pose",
 * "num_workers" (< 1: every CPU)}. *out (freed with ffcv_free) is JSON {"names",
 * "kpt_shape", "flip_idx", "orphans": label files without their image (folder
 * splits), "images": [{"image", "label", "missing" (no label file), "width",
 * "height", "classes", "boxes" (x0, y0, x1, y1 pixels), "polygons" (segment:
 * x, y pixels), "keypoints" (pose: x, y[, visibility] per point, pixels),
 * "error" (the image cannot be used: why, naming the file and line)}]}.
 * Returns the number of images. */
int64_t ffcv_yolo_scan(const char *spec_json, char **out, char **err);
/* A TextField (type_id 102) value in ffcv_writer_put: i is the number of captions,
 * data their UTF-8 bytes one after another, column (column_len bytes) uint32s: each
 * caption's byte length, then, for a field with tokens, each caption's number of
 * tokens, then every caption's token ids in turn. Its spec adds "text": {"tokens",
 * "vocab_size", "sot", "eot", "pad", "tokenizer"}. */
/* Writes an ImageFolder tree straight to a .beton with fields (image: RGBImageField,
 * label: IntField), reading, resizing and encoding in Go. spec_json as for
 * ffcv_writer_create without "fields", plus "image": {write options}. progress,
 * if not NULL, is updated with the number of samples written. */
int64_t ffcv_write_image_folder(const char *root, const char *path, const char *spec_json,
                                volatile int64_t *progress, char **err);

/* ---- ingesting: webdataset shards and Arrow record batches, in one pass ---- */

/* Starts converting webdataset shards (tar files, local paths or s3:// and http(s)://
 * URLs) to .beton files in the background; images go from the tar straight to the
 * encoder. spec_json: {"shards": [...], "fields": [as for ffcv_writer_create],
 * "take": [{"exts": ["jpg", "png"], "json_key": "caption"}, ...] (one per field: the
 * member extensions it is read from, the first present wins; json_key: a dotted key in
 * the JSON member exts[0]), "ignore": [extensions no field takes and none should be
 * reported], "output": {"prefix", "width", "suffix"} (file k is prefix + k zero-padded
 * to width digits + suffix; width < 0: one file, prefix), "split": "one", "shard" (a
 * file per shard) or "size" (a new file past "target" bytes), "skip": bad samples are
 * skipped and reported instead of failing the write, "tokenize": [TextField indices
 * whose tokens the caller gives through ffcv_ingest_texts/ffcv_ingest_tokens],
 * "text_batch", "page_size", "num_workers", "readers" (shards read ahead), "seed"}.
 * The files do not depend on the number of workers or readers. Returns a job handle:
 * ffcv_ingest_wait for its end; ffcv_close aborts it, removing the file being written. */
int64_t ffcv_ingest_webdataset(const char *spec_json, char **err);
/* The same for a MosaicML Streaming (MDS) or litdata dataset read in Go: spec_json has
 * "format": "mds" or "litdata", "root": its directory (a path, or an s3:// or http(s)://
 * prefix) holding index.json, and "columns": [the column each field is read from]
 * instead of "shards", "take" and "ignore"; "split": "shard" writes a file per MDS shard
 * or litdata chunk. */
int64_t ffcv_ingest_columns(const char *spec_json, char **err);
/* The same for samples the caller pushes (ffcv_ingest_push): spec_json has "sources"
 * (one name per input, e.g. Parquet file, for reports and "split": "shard") instead
 * of "shards", "take" and "ignore". */
int64_t ffcv_ingest_arrow(const char *spec_json, char **err);
/* Hands over the next rows of source `source`: columns holds one ffcv_column per field;
 * keys (may be NULL) a binary column naming the rows in reports (else "row N").
 * Sources are pushed in order, each ended by ffcv_ingest_end. Blocks while the job is
 * behind. */
int64_t ffcv_ingest_push(int64_t job, int64_t source, uint64_t rows, const ffcv_column *columns,
                         int32_t n_columns, const ffcv_column *keys, char **err);
/* Says source `source` has no more rows. */
int64_t ffcv_ingest_end(int64_t job, int64_t source, char **err);
/* Waits up to timeout_ms for the next batch of captions to tokenize. Returns 1 with
 * the batch: *batch its id, *n texts, their UTF-8 bytes at *data and their n + 1
 * offsets at *offsets (both freed with ffcv_free); 0 when none came in time; 2 when
 * no more will come. Each batch's tokens go back through ffcv_ingest_tokens before
 * the next one is handed out. */
int64_t ffcv_ingest_texts(int64_t job, int64_t timeout_ms, uint64_t *batch, void **data,
                          uint64_t **offsets, uint64_t *n, char **err);
/* The tokens of batch `batch`'s n texts: text k's ids are tokens[offsets[k] ..
 * offsets[k+1]] (n + 1 offsets). */
int64_t ffcv_ingest_tokens(int64_t job, uint64_t batch, const uint64_t *offsets, uint64_t n,
                           const uint32_t *tokens, uint64_t n_tokens, char **err);
/* Waits up to timeout_ms for the job to end; progress, if not NULL, gets the number
 * of samples written or skipped so far. Returns 0 while it runs; 1 at its end, with
 * *report (freed with ffcv_free) JSON {"files", "counts", "samples", "skipped",
 * "problems": [{"shard", "key", "member", "reason", "sample_skipped"}] (key null for a
 * shard problem, member null where no member is at fault), "num_problems",
 * "problem_groups": [{"reason", "count", "sample_skipped", "examples": [problem]}]};
 * a failed job's error is returned instead. The handle stays open until ffcv_close. */
int64_t ffcv_ingest_wait(int64_t job, int64_t timeout_ms, volatile int64_t *progress, char **report,
                         char **err);

/* ---- loading ---- */

/* Builds a loader from a pipeline spec (JSON, see python/ffcv_go/loader/loader.py:
 * path, batch_size, num_workers, batches_ahead, drop_last, seed, order, rank, world,
 * os_cache, outputs [{field, ops [{op, ...args}]}], ...). On a mixture's reader an
 * output may have "sources": [ops or null per source], the program of those
 * sources' samples (same per-sample output, no batch operations). "trace": "stages" times
 * every sample's stages (ffcv_loader_stats' "stages"), "events" also keeps their
 * spans for ffcv_loader_trace; "off" or absent, the workers time nothing.
 * indices (may be NULL) restricts and orders the samples. */
int64_t ffcv_loader_create(const char *spec_json, const uint64_t *indices, uint64_t n_indices,
                           char **err);
/* JSON: {"length": batches per epoch, "samples": n (this rank's), "global_samples":
 * the epoch's over all ranks, "layout": "strided" or "block" (how an epoch is cut over
 * the ranks), "outputs": [{"shape": [...], "dtype": "<f4", "slot_bytes": N}]}. */
int64_t ffcv_loader_info(int64_t loader, char **out, char **err);
/* This rank's sample order for an epoch: writes up to cap ids into out (may be
 * NULL), returns the count. */
int64_t ffcv_loader_order(int64_t loader, uint64_t epoch, uint64_t *out, uint64_t cap, char **err);
/* Elastic resume. spec_json: {"epoch", "order" (the saving run's order name:
 * "sequential", "sequential_contiguous", "random", "quasi_random" or "bucketed"), "window"
 * (its QUASI_RANDOM window, 0 for the loader's), "stages" [{"layout": "strided"|"block"|"batches"|"rest", "world",
 * "batch_size", "drop_last", "batches"}]}: what earlier runs took of the epoch.
 * global (may be NULL: the loader computes it) is the epoch's global order.
 * Writes this rank's list for the rest of the epoch into out (cap ids: at least
 * the list's length; the number of samples plus the batch size always suffices)
 * and returns its length; info gets JSON {"fingerprint", "samples", "window"} of
 * the order, "remaining", the samples left, and "length", this rank's batches
 * (of the whole epoch when there are no stages). With no stages only info is
 * written. */
int64_t ffcv_loader_elastic(int64_t loader, const char *spec_json, const uint64_t *global, uint64_t n_global,
                            uint64_t *out, uint64_t cap, char **info, char **err);
/* Starts an epoch at batch start_batch. order (may be NULL) replaces the loader's
 * order for this epoch (custom TraversalOrder, torch-generated permutations): taken
 * as this rank's order when per_rank is non-zero, else distributed over the ranks
 * first. Returns an iterator handle; close it with ffcv_close. */
int64_t ffcv_loader_start(int64_t loader, uint64_t epoch, uint64_t start_batch,
                          const uint64_t *order, uint64_t n_order, int32_t per_rank, char **err);
/* Waits for the next batch. Writes one DLManagedTensor per output, then one of the
 * batch's sample ids (int64), into tensors (capacity max_tensors); the caller owns
 * them and must call each one's deleter (torch.from_dlpack does). The batch memory
 * is reused only after every deleter ran. Returns the number of tensors, 0 at the
 * end of the epoch. On an error no tensor is written and none is owed. A sample
 * whose memory faults (the file was truncated or replaced while mapped) is an
 * error naming the file and sample. */
int64_t ffcv_iter_next(int64_t iter, ffcv_DLManagedTensor **tensors, int32_t max_tensors,
                       char **err);
/* Compiles built-in operations that follow a Python stage of the loader's
 * pipeline. spec_json: {"field": f, "in": {"shape": [...], "dtype": "|u1", "lead"?: n},
 * "ops": [{op, key, ...args}]} (key: the op's index among the pipeline's
 * built-in operations, the key of its randomness; lead: the leading dimensions
 * of a clip's frames, over which per-image ops are lifted). *out: the per-sample
 * output {"shape", "dtype", "lead"?}. Returns a handle; close it with ffcv_close. */
int64_t ffcv_loader_tail(int64_t loader, const char *spec_json, char **out, char **err);
/* Runs a tail program on batch `batch` of `epoch`: n samples with sample ids
 * `ids`, contiguous inputs in (in_len bytes) -> outputs out (out_len bytes),
 * with the random draws the loader's workers would make at those positions. */
int64_t ffcv_tail_run(int64_t tail, uint64_t epoch, uint64_t batch, const uint64_t *ids, uint64_t n,
                      const void *in, uint64_t in_len, void *out, uint64_t out_len, char **err);
/* Loader counters as JSON: samples_skipped, peak_resident_pages, slots, ...; for a
 * traced loader "stages": {name: {"ns", "count"}} (FFCV_STAGE_*: the time workers
 * spent in each stage), "ops": per output, its per-sample operations in order as
 * [{"op": name, "ns", "count"}] (each one's whole time, a decoder's read and
 * entropy decoding included; count: samples), and "trace_dropped", the spans not
 * kept. Workers hand their times over every 256 samples and at the end of their
 * epoch. For a mixture's loader, "sources" and each epoch's "sources": [{"samples"
 * (handed out), "pages_read", "bytes_read", "read_ns" (the process cache's page
 * reads: their bytes and time, summed over concurrent reads), "requests",
 * "bytes_fetched", "retries"}] by source. */
int64_t ffcv_loader_stats(int64_t loader, char **out, char **err);
/* Moves up to cap of the spans a loader created with "trace": "events" recorded
 * into out, oldest first, and returns their number; out NULL: returns how many
 * are waiting. Workers hand their spans over every 256 samples and at the end of
 * their epoch; at most 4M spans wait (later ones are dropped and counted). */
int64_t ffcv_loader_trace(int64_t loader, ffcv_trace_event *out, uint64_t cap, char **err);

/* ---- Built-in operations ---- */

/* Checks the arguments of one built-in operation spec ({"op": name, ...arguments},
 * as in ffcv_loader_create's pipelines; decoders, transforms and batch operations
 * alike) without a file: every argument the spec can get wrong, nothing that the
 * field or the operation's input decides. Returns 0, or FFCV_ERR_ARGUMENT with a
 * message that names the argument as the operation's Python constructor names it
 * (solarization_prob for solarize's "p") and not the operation: the caller names it. */
int64_t ffcv_op_check(const char *spec_json, char **err);
/* The output ({"shape": [...], "dtype": "<f4"}) a built-in transform spec makes
 * of the input in_json (same form), as a loader's build infers it, as JSON in
 * *out, freed with ffcv_free. Returns 0, or FFCV_ERR_ARGUMENT naming the bad
 * argument or input. */
int64_t ffcv_op_out(const char *spec_json, const char *in_json, char **out, char **err);
/* The names of the automatic augmentation policies' operations (torchvision's:
 * what augment_op's "name" takes) as a JSON list in *out, freed with ffcv_free.
 * Returns their number. */
int64_t ffcv_augment_ops(char **out, char **err);

/* ---- FFCV's libffcv helpers ---- */

/* Copies n bytes from src to dst. */
int64_t ffcv_memcpy(void *src, void *dst, uint64_t n, char **err);
/* Decodes the JPEG data[0:n] (src_w x src_h) into dst as RGB: the crop_w x crop_h
 * rectangle at (off_x, off_y) when crop is non-zero (else the whole image), scaled
 * by num/den (size rounded up), mirrored when flip is non-zero. */
int64_t ffcv_imdecode(void *data, uint64_t n, void *dst, uint64_t dst_len,
                      int64_t src_h, int64_t src_w, int64_t crop_h, int64_t crop_w,
                      int64_t off_x, int64_t off_y, int64_t num, int64_t den,
                      int32_t crop, int32_t flip, char **err);
/* Area-resizes rows [r0, r1) and columns [c0, c1) of the src_h x src_w RGB image
 * src into the dst_h x dst_w RGB image dst. */
int64_t ffcv_resize_crop(void *src, int64_t src_h, int64_t src_w, int64_t r0, int64_t r1,
                         int64_t c0, int64_t c1, void *dst, int64_t dst_h, int64_t dst_w, char **err);
/* Copies rows [r0, r1) and columns [c0, c1) of the src_h x src_w RGB image src
 * to the top-left corner of the dst_h x dst_w RGB image dst, zeroing the rest
 * (FFCV-SSL's pad). */
int64_t ffcv_pad(void *src, int64_t src_h, int64_t src_w, int64_t r0, int64_t r1,
                 int64_t c0, int64_t c1, void *dst, int64_t dst_h, int64_t dst_w, char **err);
/* Compresses the h x w RGB image pix as a JPEG of the given quality (1-100); *out
 * (free it with ffcv_free) holds *out_len bytes. */
int64_t ffcv_encode_jpeg(void *pix, int64_t h, int64_t w, int64_t quality, void **out,
                         uint64_t *out_len, char **err);
/* Encodes one AudioField value (an ffcv_value as the writer takes it) as the
 * field with options spec ({"storage": "flac"|"source", "bits": 16|24}) stores
 * it: *out (free it with ffcv_free) holds *out_len bytes, column (32 bytes) the
 * metadata column. A file that is corrupt, truncated, empty, of an unknown
 * codec or of sample rate 0 fails with FFCV_ERR_DATA, naming it. */
int64_t ffcv_audio_encode(const char *spec, const ffcv_value *value, void **out, uint64_t *out_len,
                          uint8_t *column, char **err);
/* Writes the lookup table of a NormalizeImage spec ({"mean": [...], "std": [...],
 * "dtype": "<f2" or "<f4"}) into out: 256 rows, one per byte value, of one output
 * value per channel, little endian, in the spec's dtype, computed in double and
 * rounded once. out_len must be 256 x channels x the dtype's size. */
int64_t ffcv_normalize_table(const char *spec, void *out, uint64_t out_len, char **err);

#endif /* FFCV_GO_TYPES_ONLY */

#ifdef __cplusplus
}
#endif
#endif
