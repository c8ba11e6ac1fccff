//! The local sentence-embedding model: sentence-transformers
//! `all-MiniLM-L6-v2` (a 6-layer BERT, 384 dimensions) in pure Rust.
//!
//! # What
//!
//! [`MiniLmEmbedder`] reproduces what `SentenceTransformer("all-MiniLM-L6-v2")`
//! computes in Python: WordPiece tokenisation (`tokenizers`), the BERT encoder
//! (`candle-transformers`, F32 on the CPU), mean pooling over the real tokens
//! of each text (including `[CLS]` and `[SEP]`, never padding) and L2
//! normalisation. Texts are truncated at 256 tokens, the model's
//! `max_seq_length`. The vectors match an independent reference implementation
//! at cosine 1.0 (see `shared/tests/minilm.rs`).
//!
//! # Why
//!
//! The semantic arm needs query vectors on the request path without a network
//! hop, a Python runtime or an ONNX shared library, and the catalog embedding
//! job needs the very same vectors for documents. A small, pinned model
//! compiled into the binary gives both, reproducibly: the three model files
//! are verified against SHA-256 digests pinned here, so a vector stored next
//! to `local/all-MiniLM-L6-v2` always means the same weights and vocabulary.
//!
//! # Determinism
//!
//! A text's vector does not depend on which other texts share its call or on
//! the batch size: results are bitwise identical whether texts are embedded
//! one by one or 32 at a time. Batches are formed only from texts of the same
//! token length, so no text is ever padded. (Padding to the longest text with
//! an attention mask is mathematically equivalent, but it changes the shapes
//! of the attention reductions and with them the floating-point summation
//! order: measured, it moved vectors by up to 1.3e-7 and cut CPU throughput
//! by ~35% against equal-length groups.) Pooling sums real tokens in order.
//!
//! # Use
//!
//! Load once per process ([`MiniLmEmbedder::load`], ~90 MB of weights) and
//! share it; cloning is cheap (the model sits behind an `Arc`). The model
//! files are fetched by `scripts/fetch-model.sh` into
//! [`MiniLmEmbedder::default_dir`]. The async [`Embedder::embed`] runs the
//! CPU-bound inference on tokio's blocking pool, at most one inference per
//! core the process may use at a time, process-wide: a call waits for a
//! free place first (within whatever deadline its caller applies), and an
//! inference whose caller went away still holds its place until it ends,
//! so concurrent queries cannot pile CPU work beyond the cores.
//! [`MiniLmEmbedder::embed_sync`] is the same computation for synchronous
//! callers, outside that bound.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use sha2::{Digest, Sha256};
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};
use tokio::sync::Semaphore;

use super::{l2_normalize, EmbedError, EmbedKind, Embedder};

/// Identifier stored next to every vector this model produces.
pub const MODEL_ID: &str = "local/all-MiniLM-L6-v2";
/// Length of every vector.
pub const DIMENSION: usize = 384;
/// Longest input in tokens, `[CLS]` and `[SEP]` included (sentence-transformers'
/// `max_seq_length`); longer texts are truncated.
pub const MAX_SEQ_LEN: usize = 256;
/// Most texts run through the encoder in one forward pass.
pub const MAX_BATCH: usize = 32;

/// Pinned SHA-256 digests of the model files (the same as in
/// `scripts/fetch-model.sh`).
pub const MODEL_SHA256: &str = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";
pub const TOKENIZER_SHA256: &str =
    "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037";
pub const CONFIG_SHA256: &str = "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41";

/// `[PAD]` in the vocabulary (config.json `pad_token_id`).
const PAD_ID: u32 = 0;

const FETCH_HINT: &str = "run scripts/fetch-model.sh to fetch and verify the model";

/// all-MiniLM-L6-v2 on the CPU. Cheap to clone.
#[derive(Clone)]
pub struct MiniLmEmbedder {
    inner: Arc<Inner>,
}

struct Inner {
    model: BertModel,
    /// Padding off, truncation at [`MAX_SEQ_LEN`].
    tokenizer: Tokenizer,
    device: Device,
}

impl std::fmt::Debug for MiniLmEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniLmEmbedder")
            .field("model_id", &MODEL_ID)
            .field("dimension", &DIMENSION)
            .finish_non_exhaustive()
    }
}

impl MiniLmEmbedder {
    /// `$MOSAIC_MODEL_DIR`, else `$HOME/.cache/mosaic/models/all-MiniLM-L6-v2`.
    pub fn default_dir() -> PathBuf {
        if let Some(dir) = std::env::var_os("MOSAIC_MODEL_DIR").filter(|d| !d.is_empty()) {
            return PathBuf::from(dir);
        }
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."));
        home.join(".cache/mosaic/models/all-MiniLM-L6-v2")
    }

    /// Loads `model.safetensors`, `tokenizer.json` and `config.json` from
    /// `dir`, verifying each against its pinned SHA-256 first.
    pub fn load(dir: &Path) -> Result<Self, EmbedError> {
        let config_bytes = read_verified(dir, "config.json", CONFIG_SHA256)?;
        let tokenizer_bytes = read_verified(dir, "tokenizer.json", TOKENIZER_SHA256)?;
        let model_bytes = read_verified(dir, "model.safetensors", MODEL_SHA256)?;

        let config: Config = serde_json::from_slice(&config_bytes)
            .map_err(|e| unavailable(format!("config.json in {}: {e}", dir.display())))?;
        if config.hidden_size != DIMENSION {
            return Err(unavailable(format!(
                "config.json in {} has hidden_size {}, expected {DIMENSION}",
                dir.display(),
                config.hidden_size
            )));
        }

        let mut tokenizer = Tokenizer::from_bytes(&tokenizer_bytes)
            .map_err(|e| unavailable(format!("tokenizer.json in {}: {e}", dir.display())))?;
        // The file pads every input to 128 tokens and truncates at 128; we
        // never pad (see the module docs) and truncate where the model does.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                direction: TruncationDirection::Right,
                max_length: MAX_SEQ_LEN,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
            }))
            .map_err(|e| unavailable(format!("tokenizer truncation: {e}")))?;

        let device = Device::Cpu;
        let vb = VarBuilder::from_buffered_safetensors(model_bytes, DType::F32, &device)
            .map_err(|e| unavailable(format!("model.safetensors in {}: {e}", dir.display())))?;
        let model = BertModel::load(vb, &config)
            .map_err(|e| unavailable(format!("loading BERT from {}: {e}", dir.display())))?;

        Ok(Self {
            inner: Arc::new(Inner {
                model,
                tokenizer,
                device,
            }),
        })
    }

    /// [`load`](Self::load) from [`default_dir`](Self::default_dir).
    pub fn load_default() -> Result<Self, EmbedError> {
        Self::load(&Self::default_dir())
    }

    /// Embeds `texts` on the calling thread (CPU-bound: do not call it from
    /// an async task; use [`Embedder::embed`] there). One L2-normalised
    /// 384-d vector per text, in input order.
    pub fn embed_sync(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.inner.embed(texts)
    }

    /// Runs a CPU-bound embedding function on the blocking pool, within
    /// the process's [`inferences`] bound.
    async fn off_thread(&self, texts: &[String], f: EmbedFn) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let inner = Arc::clone(&self.inner);
        let texts = texts.to_vec();
        bounded_blocking(inferences(), move || f(&inner, &texts)).await
    }

    /// The WordPiece tokens the model sees for `text`, `[CLS]` and `[SEP]`
    /// included, after truncation.
    pub fn tokens(&self, text: &str) -> Result<Vec<String>, EmbedError> {
        Ok(self.inner.encode(text)?.get_tokens().to_vec())
    }
}

#[async_trait]
impl Embedder for MiniLmEmbedder {
    fn model_id(&self) -> &str {
        MODEL_ID
    }

    fn dimension(&self) -> usize {
        DIMENSION
    }

    async fn embed_for_scoring(
        &self,
        texts: &[String],
        _kind: EmbedKind,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.off_thread(texts, Inner::embed_padded).await
    }

    /// The model is symmetric: queries and documents are encoded alike.
    async fn embed(&self, texts: &[String], _kind: EmbedKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.off_thread(texts, Inner::embed).await
    }
}

/// One of [`Inner`]'s embedding functions.
type EmbedFn = fn(&Inner, &[String]) -> Result<Vec<Vec<f32>>, EmbedError>;

/// The places for inferences running at once in this process: one per core
/// it may use (at least one).
fn inferences() -> &'static Arc<Semaphore> {
    static PLACES: OnceLock<Arc<Semaphore>> = OnceLock::new();
    PLACES.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Arc::new(Semaphore::new(cores.max(1)))
    })
}

/// Runs `f` on the blocking pool once one of `places` is free. The place
/// moves into the blocking task, so it is given back when `f` ends, not
/// when the caller stops waiting: an inference cannot be stopped, and one
/// whose caller's deadline passed still occupies a core. Waiting for a
/// place is bounded only by the caller's own deadline.
async fn bounded_blocking<T: Send + 'static>(
    places: &Arc<Semaphore>,
    f: impl FnOnce() -> Result<T, EmbedError> + Send + 'static,
) -> Result<T, EmbedError> {
    let place = Arc::clone(places)
        .acquire_owned()
        .await
        .map_err(|_| EmbedError::Failed("the embedding model is shut down".into()))?;
    tokio::task::spawn_blocking(move || {
        let result = f();
        drop(place);
        result
    })
    .await
    .map_err(|e| EmbedError::Failed(format!("embedding task failed: {e}")))?
}

impl Inner {
    fn encode(&self, text: &str) -> Result<tokenizers::Encoding, EmbedError> {
        self.tokenizer
            .encode(text, true)
            .map_err(|e| EmbedError::Failed(format!("tokenizing: {e}")))
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        // Groups of equal token length (stable, so input order within a
        // group), each run in chunks of at most MAX_BATCH. No padding is
        // ever needed, so a text's vector is independent of its neighbours
        // and of the batch size.
        self.embed_grouped(texts, |ids, order| {
            order
                .chunk_by(|&a, &b| ids[a].len() == ids[b].len())
                .flat_map(|same_length| same_length.chunks(MAX_BATCH))
                .collect()
        })
    }

    /// Like [`Inner::embed`], but texts of different lengths share a padded
    /// batch (sorted by length, so padding stays small). Much faster for
    /// many short texts; a vector may then differ from its unbatched value
    /// in the seventh decimal, so this serves scoring only, never stored
    /// embeddings.
    fn embed_padded(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed_grouped(texts, |_, order| order.chunks(MAX_BATCH).collect())
    }

    /// Tokenises `texts`, orders them by token length, runs each batch that
    /// `batches` cuts from that order through the model, and returns the
    /// vectors in input order.
    fn embed_grouped(
        &self,
        texts: &[String],
        batches: impl for<'a> Fn(&[Vec<u32>], &'a [usize]) -> Vec<&'a [usize]>,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let ids: Vec<Vec<u32>> = texts
            .iter()
            .map(|t| self.encode(t).map(|e| e.get_ids().to_vec()))
            .collect::<Result<_, _>>()?;
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| ids[i].len());
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        for group in batches(&ids, &order) {
            let seqs: Vec<&[u32]> = group.iter().map(|&i| ids[i].as_slice()).collect();
            let vectors = self
                .forward(&seqs)
                .map_err(|e| EmbedError::Failed(format!("model forward pass: {e}")))?;
            for (&i, v) in group.iter().zip(vectors) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    /// Runs token sequences through BERT and returns their mean-pooled,
    /// L2-normalised vectors. [`Inner::embed`] only passes sequences of one
    /// length; a mix would still be correct (padded to the longest, with an
    /// attention mask, and pooled over each sequence's real tokens only).
    fn forward(&self, seqs: &[&[u32]]) -> candle_core::Result<Vec<Vec<f32>>> {
        let batch = seqs.len();
        let max_len = seqs.iter().map(|s| s.len()).max().unwrap_or(0);
        let mut flat_ids = Vec::with_capacity(batch * max_len);
        let mut flat_mask = Vec::with_capacity(batch * max_len);
        for s in seqs {
            flat_ids.extend_from_slice(s);
            flat_ids.extend(std::iter::repeat_n(PAD_ID, max_len - s.len()));
            flat_mask.extend(std::iter::repeat_n(1u32, s.len()));
            flat_mask.extend(std::iter::repeat_n(0u32, max_len - s.len()));
        }
        let input_ids = Tensor::from_vec(flat_ids, (batch, max_len), &self.device)?;
        let attention_mask = Tensor::from_vec(flat_mask, (batch, max_len), &self.device)?;
        let token_type_ids = input_ids.zeros_like()?;
        let hidden = self
            .model
            .forward(&input_ids, &token_type_ids, Some(&attention_mask))?
            .to_dtype(DType::F32)?
            .to_vec3::<f32>()?;

        Ok(hidden
            .iter()
            .zip(seqs)
            .map(|(tokens, seq)| {
                // Mean over the real tokens ([CLS] and [SEP] included, as
                // sentence-transformers does), summed in a fixed order.
                let real = &tokens[..seq.len()];
                let mut sum = vec![0f64; DIMENSION];
                for token in real {
                    for (acc, x) in sum.iter_mut().zip(token) {
                        *acc += f64::from(*x);
                    }
                }
                let n = real.len().max(1) as f64;
                let mut v: Vec<f32> = sum.into_iter().map(|s| (s / n) as f32).collect();
                l2_normalize(&mut v);
                v
            })
            .collect())
    }
}

fn unavailable(msg: String) -> EmbedError {
    EmbedError::Unavailable(msg)
}

/// Reads `dir/name` and checks its SHA-256 against `expected`.
fn read_verified(dir: &Path, name: &str, expected: &str) -> Result<Vec<u8>, EmbedError> {
    let path = dir.join(name);
    let bytes = std::fs::read(&path).map_err(|e| {
        unavailable(format!(
            "cannot read model file {}: {e}; {FETCH_HINT}",
            path.display()
        ))
    })?;
    let actual = hex(&Sha256::digest(&bytes));
    if actual != expected {
        return Err(unavailable(format!(
            "model file {} has the wrong SHA-256: expected {expected}, actual {actual}; {FETCH_HINT}",
            path.display()
        )));
    }
    Ok(bytes)
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn no_more_inferences_run_at_once_than_there_are_places() {
        let places = Arc::new(Semaphore::new(2));
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let calls: Vec<_> = (0..8)
            .map(|_| {
                let (places, running, most) = (places.clone(), running.clone(), most.clone());
                tokio::spawn(async move {
                    bounded_blocking(&places, move || {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(30));
                        running.fetch_sub(1, Ordering::SeqCst);
                        Ok(())
                    })
                    .await
                })
            })
            .collect();
        for call in calls {
            call.await.unwrap().unwrap();
        }
        assert!(most.load(Ordering::SeqCst) <= 2, "{most:?}");
        assert_eq!(places.available_permits(), 2);
    }

    #[tokio::test]
    async fn an_abandoned_inference_holds_its_place_until_it_ends() {
        let places = Arc::new(Semaphore::new(1));
        let (release, released) = std::sync::mpsc::channel::<()>();
        // The caller gives up (its deadline passes) while the inference runs.
        let gave_up = tokio::time::timeout(
            Duration::from_millis(50),
            bounded_blocking(&places, move || {
                released.recv().ok();
                Ok(())
            }),
        )
        .await;
        assert!(gave_up.is_err());
        assert_eq!(places.available_permits(), 0);
        // A caller behind it waits (and gives up too) while it runs.
        let waited = tokio::time::timeout(
            Duration::from_millis(50),
            bounded_blocking(&places, || Ok(())),
        )
        .await;
        assert!(waited.is_err());
        release.send(()).unwrap();
        let freed = async {
            while places.available_permits() == 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), freed)
            .await
            .expect("the place is given back once the inference ends");
        bounded_blocking(&places, || Ok(())).await.unwrap();
    }
}
