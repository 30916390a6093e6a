//! Sentence embeddings: a pure-Rust port of Google's Universal Sentence Encoder multilingual v3
//! ("USE-m3", Apache-2.0) for Chinese and English text. A text becomes a [`DIM`]-dimensional
//! unit vector; texts that mean similar things (in either language) get vectors with a high
//! [`cosine`]. Pure: no IO (the weights are inside the binary), no clock, deterministic.
//!
//! The weights are `assets/semantic/use-m3-zh-en.bin` (19 MB, written by
//! `assets/semantic/export.py`, whose docstring documents the layout): the SentencePiece
//! vocabulary cut down to the pieces Chinese and English text uses (57,085), embeddings packed to
//! 4 bits a value, the other matrices to 8 bits (dequantized to `f32` once, at load).
//! Against the original float model the vectors keep a cosine of 0.96–0.99 (the test below).
//!
//! How a text is encoded:
//! 1. **Normalize**: Unicode NFKC, runs of whitespace collapsed to one space, trimmed; then
//!    SentencePiece's word marker `▁` before the text and in place of every space.
//! 2. **Tokenize**: SentencePiece unigram segmentation (Viterbi: the split into vocabulary pieces
//!    with the highest summed score; a character no piece covers becomes `<unk>`), between the
//!    `<s>` and `</s>` markers. An empty text is `<s> <unk> </s>`.
//! 3. **Encode**: for each n-gram order (2, 3, 5), the piece embeddings are projected (512 →
//!    256), layer-normed, and passed through two residual convolutions over windows of n
//!    neighbouring tokens; the embeddings and the three convolution outputs (1,280 values a
//!    token) are layer-normed, summed over the tokens, projected (1,280 → 512) and divided by the
//!    square root of the token count; a small feed-forward network with skip connections
//!    (512 → 320 → 320 → 512 → 512, tanh) gives the vector, scaled to unit length.
//!
//! Size limit: a text is encoded from its first [`MAX_TOKENS`] tokens (the two markers included,
//! so 254 pieces: roughly 200 English words or 300 Chinese characters); the rest is
//! ignored, and the normalizer reads no more than the characters those pieces can span, so the
//! cost of a call is bounded whatever the length of the text.
//!
//! Cost (one core, release build, AVX2): about 0.55–0.7 ms for a short query, 2.2–2.4 ms for
//! 40 words (`cargo bench --bench semantic`); [`Encoder::encode_many`] batches texts into shared
//! matrix products. The matrix products are register-blocked SIMD kernels over weights laid out
//! in column panels at load and kept 8-bit as the file stores them (`quantized`, AVX2 + FMA;
//! `PanelProduct` over `f32` panels elsewhere, on `pulp`'s run-time choice of instruction set).
//! Memory: about 20 MB once loaded (packed embeddings plus 8-bit matrices; the `f32` panels are
//! made only where the 8-bit product is unavailable, 13.5 MB more).

use std::fmt;
use std::sync::OnceLock;

use foldhash::{HashMap, HashMapExt};
use ndarray::linalg::general_mat_mul;
use ndarray::{Array2, ArrayRef2, ArrayView1, ArrayView2, ArrayViewMut2, Axis, Slice};
use unicode_normalization::UnicodeNormalization;

/// The length of an embedding: [`Encoder::encode`] returns this many `f32` values.
pub const DIM: usize = 512;

/// The most tokens a text is encoded from, the `<s>` and `</s>` markers included: a longer text
/// is cut (a size limit, see the module docs).
pub const MAX_TOKENS: usize = 256;

/// The weights shipped in the binary (see [`embedded`]).
static EMBEDDED: &[u8] = include_bytes!("../../assets/semantic/use-m3-zh-en.bin");

const MAGIC: &[u8; 8] = b"SBUSEM3\0";
const VERSION: u32 = 1;
/// Token ids of the pieces every vocabulary starts with.
const UNK: u32 = 0;
const BOS: u32 = 1;
const EOS: u32 = 2;
/// SentencePiece's word-boundary marker (U+2581), standing for a space.
const WORD_MARK: char = '\u{2581}';
/// How much lower than the lowest piece score an `<unk>` scores (SentencePiece's `kUnkPenalty`).
const UNK_PENALTY: f32 = 10.0;
/// The most tokens [`Encoder::encode_many`] puts through one batch of matrix products (bounds
/// the buffers: about 10 MB at this size).
const BATCH_TOKENS: usize = 1024;

/// Why a weights file could not be read by [`Encoder::from_bytes`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SemanticError {
    /// The file ends before a part it announces.
    #[error("the weights file is truncated: {what} at byte {offset} runs past its end")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// The byte offset where it starts.
        offset: usize,
    },
    /// The file does not start with `SBUSEM3\0`: not a weights file of this encoder.
    #[error("not a sentence-encoder weights file (bad magic bytes)")]
    BadMagic,
    /// A format version this code does not read.
    #[error("unsupported weights file version {0} (this code reads version {VERSION})")]
    BadVersion(u32),
    /// Sizes that do not fit together: a tensor of the wrong shape, too few pieces, bytes left
    /// over at the end.
    #[error("inconsistent sizes in the weights file: {0}")]
    Inconsistent(String),
    /// A vocabulary piece that is not UTF-8.
    #[error("piece {index} of the weights file's vocabulary is not UTF-8")]
    BadPiece {
        /// The piece's id.
        index: usize,
    },
}

/// The sentence encoder: a SentencePiece vocabulary and the weights of the network.
///
/// Immutable once built, `Send + Sync`: share one (usually [`embedded`]) across threads.
pub struct Encoder {
    /// Piece text → id, for the pieces text can match (not `<unk>`, `<s>`, `</s>`).
    pieces: HashMap<Box<str>, u32>,
    /// Piece scores (log probabilities), by id.
    scores: Vec<f32>,
    /// The longest matchable piece, in characters.
    max_piece_chars: usize,
    /// The score of an `<unk>` node: the lowest piece score minus [`UNK_PENALTY`].
    unk_score: f32,
    /// The embedding width (512).
    dim: usize,
    /// Embedding rows, `dim / 2` bytes each: 4-bit values, the even column in the low nibble.
    emb_packed: Vec<u8>,
    /// Per embedding row: `[scale, lo]`, the value being `q * scale + lo`.
    emb_scale_lo: Vec<[f32; 2]>,
    /// The n-gram convolutions, orders 2, 3 and 5.
    orders: Vec<Order>,
    /// Layer norm of the concatenated token features (width `dim + 3 * hidden`).
    ln_g: Vec<f32>,
    ln_b: Vec<f32>,
    /// Token features → sentence (`dim + 3 * hidden` × 512), and its bias.
    cnn_w: Matrix,
    cnn_b: Vec<f32>,
    /// The feed-forward head.
    d0: Matrix,
    d1: Matrix,
    p1: Matrix,
    d2: Matrix,
    p3: Matrix,
    d3: Matrix,
    /// Layer norm epsilon.
    eps: f32,
}

/// One n-gram order of the convolutional part.
struct Order {
    /// Window width in tokens.
    n: usize,
    /// Tokens of the window before the current one.
    left: usize,
    /// `dim` × `hidden` projection and its bias, then a layer norm.
    proj: Matrix,
    proj_b: Vec<f32>,
    ln_g: Vec<f32>,
    ln_b: Vec<f32>,
    /// The two residual convolutions: `n * hidden` × `hidden`, and biases.
    w1: Matrix,
    b1: Vec<f32>,
    w2: Matrix,
    b2: Vec<f32>,
}

/// Tensor names per order, in the file's order: (n, left, proj, w1, w2, proj_b, ln_g, ln_b, b1,
/// b2).
type OrderNames = (usize, usize, &'static str, &'static str, &'static str, [&'static str; 5]);
const ORDERS: [OrderNames; 3] = [
    (2, 0, "proj2", "w1_2", "w2_2", ["proj_b2", "ln_g2", "ln_b2", "b1_2", "b2_2"]),
    (3, 1, "proj3", "w1_3", "w2_3", ["proj_b3", "ln_g3", "ln_b3", "b1_3", "b2_3"]),
    (5, 2, "proj5", "w1_5", "w2_5", ["proj_b5", "ln_g5", "ln_b5", "b1_5", "b2_5"]),
];

// The encoder is shared across threads.
const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Encoder>();
};

/// The encoder of the weights shipped inside the binary (19 MB), parsed on first use (about
/// 10 ms in a release build) and kept for the life of the process (about 20 MB).
///
/// # Panics
/// Never in practice: the file is included at compile time (`include_bytes!`) and a test parses
/// it, so the `expect` on its parse cannot fail for a built binary.
pub fn embedded() -> &'static Encoder {
    static ENCODER: OnceLock<Encoder> = OnceLock::new();
    ENCODER.get_or_init(|| Encoder::from_bytes(EMBEDDED).expect("the embedded weights file parses (tested)"))
}

/// The cosine similarity of two embeddings of [`Encoder::encode`]: their dot product, as both
/// have unit length. In [-1, 1]; related texts score higher (how high depends on the texts: a
/// threshold has to be calibrated on real queries). Vectors of different lengths are compared
/// over the shorter one.
#[must_use]
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The dot product of `v` with each row of `rows` (row-major, rows of `v.len()` values): the
/// cosines of a query's embedding with many texts' at once. SIMD where the machine has it
/// (`pulp`), as the card texts of a large registry number in the thousands. Empty when `v` is.
#[must_use]
pub fn dot_rows(rows: &[f32], v: &[f32]) -> Vec<f32> {
    if v.is_empty() {
        return Vec::new();
    }
    pulp::Arch::new().dispatch(DotRows { rows, v })
}

struct DotRows<'a> {
    rows: &'a [f32],
    v: &'a [f32],
}

impl pulp::WithSimd for DotRows<'_> {
    type Output = Vec<f32>;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) -> Vec<f32> {
        // Plain loops, no closures: a closure is compiled apart from this function and would
        // lose its instruction set (every SIMD operation a call).
        let (v_head, v_tail) = S::as_simd_f32s(self.v);
        let mut out = Vec::with_capacity(self.rows.len() / self.v.len());
        for row in self.rows.chunks_exact(self.v.len()) {
            let (head, tail) = S::as_simd_f32s(row);
            // Four independent sums, so the multiply-adds overlap.
            let mut acc = [simd.splat_f32s(0.0); 4];
            let whole = head.len() / 4 * 4;
            for (w, x) in head[..whole].chunks_exact(4).zip(v_head.chunks_exact(4)) {
                for ((sum, &w), &x) in acc.iter_mut().zip(w).zip(x) {
                    *sum = simd.mul_add_e_f32s(w, x, *sum);
                }
            }
            for (&w, &x) in head[whole..].iter().zip(&v_head[whole..]) {
                acc[0] = simd.mul_add_e_f32s(w, x, acc[0]);
            }
            let mut sum =
                simd.reduce_sum_f32s(simd.add_f32s(simd.add_f32s(acc[0], acc[1]), simd.add_f32s(acc[2], acc[3])));
            for (&w, &x) in tail.iter().zip(v_tail) {
                sum += w * x;
            }
            out.push(sum);
        }
        out
    }
}

impl Encoder {
    /// Reads an encoder from a weights file in the format of `assets/semantic/export.py`.
    /// Copies what it keeps: `bytes` may be dropped afterwards.
    ///
    /// # Errors
    /// [`SemanticError`] when the bytes are not a complete, consistent weights file (truncated,
    /// bad magic, another version, tensors of the wrong shapes, trailing bytes). Never panics on
    /// malformed input.
    pub fn from_bytes(bytes: &[u8]) -> Result<Encoder, SemanticError> {
        let mut r = Reader { bytes, pos: 0 };
        if r.take(MAGIC.len(), "the magic bytes")? != MAGIC {
            return Err(SemanticError::BadMagic);
        }
        let version = r.u32("the version")?;
        if version != VERSION {
            return Err(SemanticError::BadVersion(version));
        }

        let n_pieces = r.u32("the piece count")? as usize;
        if n_pieces <= EOS as usize {
            return Err(inconsistent(format!("{n_pieces} pieces: fewer than <unk>, <s>, </s>")));
        }
        let mut pieces = HashMap::with_capacity(n_pieces.min(bytes.len() / 6));
        let mut scores = Vec::with_capacity(n_pieces.min(bytes.len() / 6));
        let mut max_piece_chars = 1;
        for index in 0..n_pieces {
            let len = usize::from(r.u16("a piece length")?);
            let text = std::str::from_utf8(r.take(len, "a piece")?).map_err(|_| SemanticError::BadPiece { index })?;
            scores.push(r.f32("a piece score")?);
            if index > EOS as usize && !text.is_empty() {
                max_piece_chars = max_piece_chars.max(text.chars().count());
                pieces.insert(Box::from(text), index as u32);
            }
        }
        let unk_score = scores.iter().copied().fold(f32::INFINITY, f32::min) - UNK_PENALTY;

        let dim = r.u32("the embedding width")? as usize;
        if dim == 0 || dim % 2 != 0 {
            return Err(inconsistent(format!("embedding width {dim}: not a positive even number")));
        }
        let packed_len = n_pieces.checked_mul(dim / 2).ok_or_else(|| inconsistent("embedding table size".into()))?;
        let emb_packed = r.take(packed_len, "the embedding table")?.to_vec();
        let scale_lo = r.f32s(n_pieces.saturating_mul(2), "the embedding scales")?;
        let emb_scale_lo = scale_lo.chunks_exact(2).map(|p| [p[0], p[1]]).collect();

        let mut conv = Vec::with_capacity(ORDERS.len());
        for (_, _, proj, w1, w2, _) in ORDERS {
            conv.push((r.matrix(proj)?, r.matrix(w1)?, r.matrix(w2)?));
        }
        let cnn_w = r.matrix("cnn_W")?;
        let d0 = r.matrix("d0")?;
        let d1 = r.matrix("d1")?;
        let p1 = r.matrix("p1")?;
        let d2 = r.matrix("d2")?;
        let p3 = r.matrix("p3")?;
        let d3 = r.matrix("d3")?;

        let hidden = conv[0].0.ncols();
        let feat = dim + ORDERS.len() * hidden;
        let mut orders = Vec::with_capacity(ORDERS.len());
        for ((n, left, proj_name, w1_name, w2_name, names), (proj, w1, w2)) in ORDERS.into_iter().zip(conv) {
            shape(proj_name, &proj, dim, hidden)?;
            shape(w1_name, &w1, n * hidden, hidden)?;
            shape(w2_name, &w2, n * hidden, hidden)?;
            let [proj_b, ln_g, ln_b, b1, b2] = names.map(|name| r.vector(name, hidden));
            orders.push(Order { n, left, proj, proj_b: proj_b?, ln_g: ln_g?, ln_b: ln_b?, w1, b1: b1?, w2, b2: b2? });
        }
        let ln_g = r.vector("ln_g", feat)?;
        let ln_b = r.vector("ln_b", feat)?;
        let sent = cnn_w.ncols();
        let cnn_b = r.vector("cnn_b", sent)?;
        let eps = r.f32("the layer-norm epsilon")?;
        if r.pos != bytes.len() {
            return Err(inconsistent(format!("{} bytes after the last tensor", bytes.len() - r.pos)));
        }

        shape("cnn_W", &cnn_w, feat, sent)?;
        let hid = d0.ncols();
        shape("d0", &d0, sent, hid)?;
        shape("d1", &d1, hid, hid)?;
        shape("p1", &p1, sent, hid)?;
        let wide = d2.ncols();
        shape("d2", &d2, hid, wide)?;
        shape("p3", &p3, hid, DIM)?;
        shape("d3", &d3, wide, DIM)?;

        Ok(Encoder {
            pieces,
            scores,
            max_piece_chars,
            unk_score,
            dim,
            emb_packed,
            emb_scale_lo,
            orders,
            ln_g,
            ln_b,
            cnn_w,
            cnn_b,
            d0,
            d1,
            p1,
            d2,
            p3,
            d3,
            eps,
        })
    }

    /// The embedding of a text: [`DIM`] values, unit length (L2). Any text works, empty
    /// included; only its first [`MAX_TOKENS`] tokens count (see the module docs).
    #[must_use]
    pub fn encode(&self, text: &str) -> Vec<f32> {
        self.forward(&[self.tokens(text)]).pop().unwrap_or_default()
    }

    /// The embeddings of several texts, in order: the same vectors as [`Encoder::encode`] of each
    /// (to rounding), computed in shared batches, which is faster per text.
    #[must_use]
    pub fn encode_many(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        let mut out = Vec::with_capacity(texts.len());
        let mut batch: Vec<Vec<u32>> = Vec::new();
        let mut batch_tokens = 0;
        for text in texts {
            let ids = self.tokens(text);
            if batch_tokens + ids.len() > BATCH_TOKENS && !batch.is_empty() {
                out.extend(self.forward(&batch));
                batch.clear();
                batch_tokens = 0;
            }
            batch_tokens += ids.len();
            batch.push(ids);
        }
        if !batch.is_empty() {
            out.extend(self.forward(&batch));
        }
        out
    }

    /// The token ids a text is encoded from: `<s>` (1), the SentencePiece pieces of the
    /// normalized text (`<unk>`, 0, for a character no piece covers), `</s>` (2). At most
    /// [`MAX_TOKENS`]; `[1, 0, 2]` for an empty or all-whitespace text. Ids index the weights
    /// file's vocabulary. For tests and diagnostics.
    #[must_use]
    pub fn tokens(&self, text: &str) -> Vec<u32> {
        let s = self.normalize(text);
        if s.is_empty() {
            return vec![BOS, UNK, EOS];
        }
        // Byte offsets of the characters, and the end.
        let bounds: Vec<usize> = s.char_indices().map(|(i, _)| i).chain([s.len()]).collect();
        let len = bounds.len() - 1;
        // Viterbi over character positions: the best score of a segmentation of the first i
        // characters, the start and the piece of its last node.
        let mut best = vec![f32::NEG_INFINITY; len + 1];
        let mut start = vec![0usize; len + 1];
        let mut piece = vec![UNK; len + 1];
        best[0] = 0.0;
        for i in 0..len {
            let mut single = false;
            for j in i + 1..=len.min(i + self.max_piece_chars) {
                let Some(&id) = self.pieces.get(&s[bounds[i]..bounds[j]]) else { continue };
                let score = best[i] + self.scores[id as usize];
                if score > best[j] {
                    (best[j], start[j], piece[j]) = (score, i, id);
                }
                single |= j == i + 1;
            }
            if !single {
                let score = best[i] + self.unk_score;
                if score > best[i + 1] {
                    (best[i + 1], start[i + 1], piece[i + 1]) = (score, i, UNK);
                }
            }
        }
        let mut ids = Vec::new();
        let mut end = len;
        while end > 0 {
            ids.push(piece[end]);
            end = start[end];
        }
        ids.push(BOS);
        ids.reverse();
        ids.truncate(MAX_TOKENS - 1);
        ids.push(EOS);
        ids
    }

    /// NFKC, whitespace runs collapsed and trimmed, `▁` before the text and for each space; at
    /// most as many characters as the longest piece times the pieces kept ("" for no text).
    fn normalize(&self, text: &str) -> String {
        let limit = (MAX_TOKENS - 2) * self.max_piece_chars;
        let mut out = String::with_capacity(text.len().min(limit * 4) + WORD_MARK.len_utf8());
        let mut chars = 0;
        // A word marker is due before the next character: the leading one, or a space.
        let mut space = true;
        for c in text.nfkc() {
            if is_space(c) {
                space = true;
                continue;
            }
            chars += 1 + usize::from(space);
            if chars > limit {
                break;
            }
            if space {
                out.push(WORD_MARK);
                space = false;
            }
            out.push(c);
        }
        out
    }

    /// The embeddings of a batch of token sequences (each non-empty). The sequences' tokens are
    /// stacked into one matrix, so each layer is one matrix product for the whole batch; the
    /// convolution windows stop at each sequence's ends.
    fn forward(&self, seqs: &[Vec<u32>]) -> Vec<Vec<f32>> {
        let lens: Vec<usize> = seqs.iter().map(Vec::len).collect();
        let total: usize = lens.iter().sum();
        let (e, h) = (self.dim, self.orders[0].proj_b.len());
        let feat = self.ln_g.len();
        let widest = self.orders.iter().map(|o| o.n).max().unwrap_or(1) * h;

        // Token features: [embedding | order 2 | order 3 | order 5], a row per token.
        let mut feats = vec![0.0f32; total * feat];
        for (row, &id) in feats.chunks_exact_mut(feat).zip(seqs.iter().flatten()) {
            self.embedding(id, &mut row[..e]);
        }
        let mut x = vec![0.0f32; total * h];
        let mut hid = vec![0.0f32; total * h];
        let mut win = vec![0.0f32; total * widest];
        for (k, order) in self.orders.iter().enumerate() {
            let wide = order.n * h;
            let win = &mut win[..total * wide];
            // x = LN(emb @ proj + proj_b)
            fill_rows(&mut x, &order.proj_b);
            matmul(&rows(&feats, feat).slice_axis(Axis(1), Slice::from(..e)), &order.proj, &mut rows_mut(&mut x, h));
            layer_norm(&mut x, &order.ln_g, &order.ln_b, self.eps);
            // hid = relu(window(x) @ w1 + b1) + x
            window(&x, h, &lens, order.n, order.left, win);
            fill_rows(&mut hid, &order.b1);
            matmul(&rows(win, wide), &order.w1, &mut rows_mut(&mut hid, h));
            relu_add(&mut hid, &x);
            // c = relu(window(hid) @ w2 + b2) + hid, into the order's columns of the features
            window(&hid, h, &lens, order.n, order.left, win);
            let cols = e + k * h..e + (k + 1) * h;
            {
                let mut all = rows_mut(&mut feats, feat);
                let mut c = all.slice_axis_mut(Axis(1), Slice::from(cols.clone()));
                c.assign(&ArrayView1::from(&order.b2[..]));
                matmul(&rows(win, wide), &order.w2, &mut c);
            }
            for (row, res) in feats.chunks_exact_mut(feat).zip(hid.chunks_exact(h)) {
                relu_add(&mut row[cols.clone()], res);
            }
        }
        layer_norm(&mut feats, &self.ln_g, &self.ln_b, self.eps);

        // Per sentence: (Σ features) @ cnn_W + n * cnn_b, over √n.
        let mut sums = vec![0.0f32; seqs.len() * feat];
        let mut token_rows = feats.chunks_exact(feat);
        for (sum, &len) in sums.chunks_exact_mut(feat).zip(&lens) {
            for row in token_rows.by_ref().take(len) {
                sum.iter_mut().zip(row).for_each(|(s, v)| *s += v);
            }
        }
        let sent = self.cnn_b.len();
        let mut m = vec![0.0f32; seqs.len() * sent];
        for (row, &len) in m.chunks_exact_mut(sent).zip(&lens) {
            row.iter_mut().zip(&self.cnn_b).for_each(|(v, b)| *v = len as f32 * b);
        }
        matmul(&rows(&sums, feat), &self.cnn_w, &mut rows_mut(&mut m, sent));
        for (row, &len) in m.chunks_exact_mut(sent).zip(&lens) {
            let norm = (len as f32).sqrt();
            row.iter_mut().for_each(|v| *v /= norm);
        }

        // The head: y0 = relu(m d0); y1 = relu(m p1 + y0 d1); y2 = relu(y1 d2);
        // z = tanh(y1 p3 + y2 d3).
        let n = seqs.len();
        let m = rows(&m, sent);
        let mut y0 = Array2::zeros((n, self.d0.ncols()));
        matmul(&m, &self.d0, &mut y0);
        y0.mapv_inplace(relu);
        let mut y1 = Array2::zeros((n, self.p1.ncols()));
        matmul(&m, &self.p1, &mut y1);
        matmul(&y0, &self.d1, &mut y1);
        y1.mapv_inplace(relu);
        let mut y2 = Array2::zeros((n, self.d2.ncols()));
        matmul(&y1, &self.d2, &mut y2);
        y2.mapv_inplace(relu);
        let mut z = Array2::zeros((n, DIM));
        matmul(&y1, &self.p3, &mut z);
        matmul(&y2, &self.d3, &mut z);
        z.rows()
            .into_iter()
            .map(|row| {
                let mut v: Vec<f32> = row.iter().map(|x| x.tanh()).collect();
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
                v.iter_mut().for_each(|x| *x /= norm);
                v
            })
            .collect()
    }

    /// Writes the embedding row of piece `id` (`dim` values) into `out`.
    fn embedding(&self, id: u32, out: &mut [f32]) {
        let id = id as usize;
        let half = self.dim / 2;
        let [scale, lo] = self.emb_scale_lo[id];
        for (pair, &byte) in out.chunks_exact_mut(2).zip(&self.emb_packed[id * half..(id + 1) * half]) {
            pair[0] = f32::from(byte & 15) * scale + lo;
            pair[1] = f32::from(byte >> 4) * scale + lo;
        }
    }
}

impl fmt::Debug for Encoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Encoder")
            .field("pieces", &self.scores.len())
            .field("dim", &self.dim)
            .field("out", &DIM)
            .finish_non_exhaustive()
    }
}

/// Whitespace as Python's `str.isspace` (what the reference normalizer collapses): Unicode
/// White_Space plus the information separators U+001C..U+001F.
fn is_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

fn relu(x: f32) -> f32 {
    x.max(0.0)
}

/// `out = relu(out) + residual`, element-wise.
fn relu_add(out: &mut [f32], residual: &[f32]) {
    out.iter_mut().zip(residual).for_each(|(o, r)| *o = relu(*o) + r);
}

/// Every row of `buf` (rows of `row.len()` values) set to `row`.
fn fill_rows(buf: &mut [f32], row: &[f32]) {
    buf.chunks_exact_mut(row.len()).for_each(|r| r.copy_from_slice(row));
}

/// Layer norm of each row of `buf` (rows as wide as `g`): zero mean, unit variance (`eps`
/// added), then times `g` plus `b`.
fn layer_norm(buf: &mut [f32], g: &[f32], b: &[f32], eps: f32) {
    let width = g.len() as f32;
    for row in buf.chunks_exact_mut(g.len()) {
        let mean = row.iter().sum::<f32>() / width;
        let mut var = 0.0;
        for v in row.iter_mut() {
            *v -= mean;
            var += *v * *v;
        }
        let inv = 1.0 / (var / width + eps).sqrt();
        for ((v, g), b) in row.iter_mut().zip(g).zip(b) {
            *v = *v * inv * g + b;
        }
    }
}

/// The convolution windows: row `t` of `out` is the rows `t - left ..= t - left + n - 1` of
/// `src` (each `width` wide) side by side, zeros where that runs outside the token's sequence
/// (`lens` gives the sequences' lengths, stacked in `src`).
fn window(src: &[f32], width: usize, lens: &[usize], n: usize, left: usize, out: &mut [f32]) {
    let mut out_rows = out.chunks_exact_mut(n * width);
    let mut first = 0;
    for &len in lens {
        for (t, row) in out_rows.by_ref().take(len).enumerate() {
            for (k, block) in row.chunks_exact_mut(width).enumerate() {
                match (t + k).checked_sub(left) {
                    Some(i) if i < len => {
                        let from = (first + i) * width;
                        block.copy_from_slice(&src[from..from + width]);
                    }
                    _ => block.fill(0.0),
                }
            }
        }
        first += len;
    }
}

/// A row-major buffer as a matrix `width` wide.
fn rows(buf: &[f32], width: usize) -> ArrayView2<'_, f32> {
    ArrayView2::from_shape((buf.len() / width, width), buf).expect("a buffer of whole rows")
}

/// A row-major buffer as a mutable matrix `width` wide.
fn rows_mut(buf: &mut [f32], width: usize) -> ArrayViewMut2<'_, f32> {
    ArrayViewMut2::from_shape((buf.len() / width, width), buf).expect("a buffer of whole rows")
}

/// A weight matrix, `k` × `n`, in panels of [`PANEL`] columns: each panel is its `k` rows of
/// `PANEL` values, one after the other (the last one padded with zeros), so that a product
/// reads the weights strictly in order.
struct Matrix {
    k: usize,
    n: usize,
    /// The panels in `f32`; for a matrix read from a weights file, made from the 8-bit ones on
    /// first use (only where the 8-bit product is not available: debug builds, no AVX2).
    panels: OnceLock<Vec<f32>>,
    /// The same panels in 8 bits (as the weights file stores them), when read from one.
    quantized: Option<Quantized>,
}

/// 8-bit panels: the value at (row, column) is `panels[..] as f32 * scale[column]`.
struct Quantized {
    /// Panel after panel, `k` rows of [`PANEL`] bytes each, then 8 bytes of padding (a row's
    /// second half is read as 16 bytes from its middle).
    panels: Vec<i8>,
    /// Per column, padded with zeros to whole panels.
    scale: Vec<f32>,
}

/// Columns of a [`Matrix`] panel.
const PANEL: usize = 16;

/// `k` × `n` values (`at(row, column)`, `fill` where missing) laid out in panels of [`PANEL`]
/// columns, the last padded with `fill`.
fn in_panels<T: Copy>(k: usize, n: usize, fill: T, at: impl Fn(usize, usize) -> Option<T>) -> Vec<T> {
    let mut panels = Vec::with_capacity(n.div_ceil(PANEL) * k * PANEL);
    for p in 0..n.div_ceil(PANEL) {
        for i in 0..k {
            panels.extend((0..PANEL).map(|j| at(i, p * PANEL + j).unwrap_or(fill)));
        }
    }
    panels
}

impl Matrix {
    #[cfg(test)]
    fn new(rows: &ArrayRef2<f32>) -> Matrix {
        let (k, n) = rows.dim();
        let panels = in_panels(k, n, 0.0, |i, j| rows.get((i, j)).copied());
        Matrix { k, n, panels: OnceLock::from(panels), quantized: None }
    }

    /// A matrix stored as `k` rows of `n` signed bytes (`q`, row-major) and a scale per column.
    fn from_quantized(q: &[u8], scale: &[f32], k: usize, n: usize) -> Matrix {
        let at = |i: usize, j: usize| (j < n).then(|| q.get(i * n + j).map(|&b| b as i8)).flatten();
        let mut panels = in_panels(k, n, 0i8, at);
        // A row's second half is read as 16 bytes from its middle.
        panels.extend([0; PANEL / 2]);
        let mut scale = scale.to_vec();
        scale.resize(n.div_ceil(PANEL) * PANEL, 0.0);
        Matrix { k, n, panels: OnceLock::new(), quantized: Some(Quantized { panels, scale }) }
    }

    /// The `f32` panels.
    fn f32_panels(&self) -> &[f32] {
        self.panels.get_or_init(|| {
            let Some(q) = &self.quantized else { return Vec::new() };
            let np = self.n.div_ceil(PANEL);
            let k = self.k.max(1);
            q.panels[..np * self.k * PANEL]
                .chunks_exact(PANEL)
                .enumerate()
                .flat_map(|(r, row)| {
                    let scale = &q.scale[r / k * PANEL..(r / k + 1) * PANEL];
                    row.iter().zip(scale).map(|(&b, s)| f32::from(b) * s)
                })
                .collect()
        })
    }

    fn nrows(&self) -> usize {
        self.k
    }

    fn ncols(&self) -> usize {
        self.n
    }

    /// Panel `p` as a `k` × (its columns) matrix.
    fn panel(&self, p: usize) -> ArrayView2<'_, f32> {
        let mut view = rows(&self.f32_panels()[p * self.k * PANEL..(p + 1) * self.k * PANEL], PANEL);
        view.slice_axis_inplace(Axis(1), Slice::from(..PANEL.min(self.n - p * PANEL)));
        view
    }
}

/// `c += a @ b`, any strides: over the 8-bit panels (x86-64 with AVX2 + FMA), else by
/// [`PanelProduct`], or where that declines too (no SIMD, rows not contiguous, a width not whole
/// panels) by matrixmultiply's sgemm (through ndarray's `general_mat_mul`) a panel at a time.
/// sgemm copies `b` into its own panels on every call: for one query's few tokens that copy of
/// the weights cost as much as the product (1.3 ms an encoding with sgemm alone, 0.6–0.8 ms over
/// `f32` panels, 0.55–0.7 ms over 8-bit ones; a 40-word text 3.0 → 2.2–2.4 ms). Unoptimized
/// builds (the debug test suite) always take sgemm: there every SIMD operation of the kernel is
/// a function call.
fn matmul(a: &ArrayRef2<f32>, b: &Matrix, c: &mut ArrayRef2<f32>) {
    if cfg!(debug_assertions) || !(quantized::run(a, b, c) || PanelProduct::run(a, b, c)) {
        for p in 0..b.n.div_ceil(PANEL) {
            let cols = p * PANEL..(p * PANEL + PANEL).min(b.n);
            general_mat_mul(1.0, a, &b.panel(p), 1.0, &mut c.slice_axis_mut(Axis(1), Slice::from(cols)));
        }
    }
}

/// `c += a @ b` over `b`'s 8-bit panels on x86-64 with AVX2 + FMA (a quarter of the memory
/// traffic of the `f32` panels: the encoder is bound by reading its weights): bytes widened to
/// `f32` in registers, sums scaled per column at the end. Declines (false, `c` untouched) without
/// those instructions, 8-bit panels or contiguous rows.
#[cfg(target_arch = "x86_64")]
mod quantized {
    use ndarray::ArrayRef2;
    use pulp::x86::V3;
    use pulp::{f32x8, i8x16};

    use super::{non_zero, operands, Matrix, Quantized, BLOCK_ROWS, PANEL};

    pub(super) fn run(a: &ArrayRef2<f32>, b: &Matrix, c: &mut ArrayRef2<f32>) -> bool {
        let (Some(v3), Some(q)) = (V3::try_new(), b.quantized.as_ref()) else { return false };
        let Some((a, c)) = operands(a, b, c) else { return false };
        pulp::Simd::vectorize(v3, Product { v3, a, c, q, k: b.k });
        true
    }

    struct Product<'a> {
        v3: V3,
        a: Vec<&'a [f32]>,
        c: Vec<&'a mut [f32]>,
        q: &'a Quantized,
        k: usize,
    }

    impl pulp::WithSimd for Product<'_> {
        type Output = ();

        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, _: S) {
            let Product { v3, a, mut c, q, k } = self;
            let panels = q.panels.len() / (k * PANEL);
            let (mut a, mut c) = (a.as_slice(), c.as_mut_slice());
            let mut nonzero = Vec::new();
            while !a.is_empty() {
                let take = a.len().min(BLOCK_ROWS);
                let (a_block, a_rest) = a.split_at(take);
                let (c_block, c_rest) = c.split_at_mut(take);
                for p in 0..panels {
                    match take {
                        4 => block::<4>(v3, a_block, q, k, c_block, p),
                        3 => block::<3>(v3, a_block, q, k, c_block, p),
                        2 => block::<2>(v3, a_block, q, k, c_block, p),
                        _ => {
                            if p == 0 {
                                non_zero(a_block[0], &mut nonzero);
                            }
                            sparse(v3, &nonzero, q, k, c_block, p);
                        }
                    }
                }
                (a, c) = (a_rest, c_rest);
            }
        }
    }

    /// Row `i` of panel `p`: its 16 weights as two vectors of 8 (unscaled).
    #[inline(always)]
    fn weights(v3: V3, q: &Quantized, k: usize, p: usize, i: usize) -> [f32x8; 2] {
        let at = (p * k + i) * PANEL;
        let half = |from: usize| {
            let bytes: [i8; 16] = q.panels[from..from + 16].try_into().unwrap_or([0; 16]);
            v3.convert_i32x8_to_f32x8(v3.convert_i8x16_to_i32x8(pulp::cast::<[i8; 16], i8x16>(bytes)))
        };
        [half(at), half(at + PANEL / 2)]
    }

    /// `c[r][panel p] += scale * sums`, the sums of the block's rows.
    #[inline(always)]
    fn store<const R: usize>(v3: V3, acc: &[[f32x8; 2]; R], q: &Quantized, c: &mut [&mut [f32]], p: usize) {
        let at = p * PANEL;
        for (sums, row) in acc.iter().zip(c.iter_mut()) {
            for (h, sum) in sums.iter().enumerate() {
                let cols = at + h * 8..at + h * 8 + 8;
                let scale: [f32; 8] = q.scale[cols.clone()].try_into().unwrap_or([0.0; 8]);
                let old: [f32; 8] = row[cols.clone()].try_into().unwrap_or([0.0; 8]);
                let new = v3.mul_add_f32x8(*sum, pulp::cast(scale), pulp::cast(old));
                row[cols].copy_from_slice(&pulp::cast::<f32x8, [f32; 8]>(new));
            }
        }
    }

    #[inline(always)]
    fn block<const R: usize>(v3: V3, a: &[&[f32]], q: &Quantized, k: usize, c: &mut [&mut [f32]], p: usize) {
        let zero = v3.splat_f32x8(0.0);
        let mut acc = [[zero; 2]; R];
        let a: [&[f32]; R] = std::array::from_fn(|r| a[r]);
        for i in 0..k {
            let [lo, hi] = weights(v3, q, k, p, i);
            for (sums, row) in acc.iter_mut().zip(&a) {
                let x = v3.splat_f32x8(row[i]);
                sums[0] = v3.mul_add_f32x8(x, lo, sums[0]);
                sums[1] = v3.mul_add_f32x8(x, hi, sums[1]);
            }
        }
        store::<R>(v3, &acc, q, c, p);
    }

    /// One row given as its non-zero `(index, value)` pairs.
    #[inline(always)]
    fn sparse(v3: V3, nonzero: &[(usize, f32)], q: &Quantized, k: usize, c: &mut [&mut [f32]], p: usize) {
        let zero = v3.splat_f32x8(0.0);
        let mut acc = [[zero; 2]; 1];
        for &(i, x) in nonzero {
            let [lo, hi] = weights(v3, q, k, p, i);
            let x = v3.splat_f32x8(x);
            acc[0][0] = v3.mul_add_f32x8(x, lo, acc[0][0]);
            acc[0][1] = v3.mul_add_f32x8(x, hi, acc[0][1]);
        }
        store::<1>(v3, &acc, q, c, p);
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod quantized {
    pub(super) fn run(_: &ndarray::ArrayRef2<f32>, _: &super::Matrix, _: &mut ndarray::ArrayRef2<f32>) -> bool {
        false
    }
}

/// Rows of `c` whose sums a block keeps in registers, one panel wide.
const BLOCK_ROWS: usize = 4;

/// `c += a @ b`, register-blocked: for a block of [`BLOCK_ROWS`] rows of `a` and one panel of
/// `b` (two for a block of two or three rows), the sums stay in SIMD registers while `k` runs
/// down the panel, read in order; `b` is never copied. The instruction set is chosen at run time by `pulp` (AVX2 + FMA on x86-64 when
/// present); without SIMD it declines and sgemm does the product.
struct PanelProduct<'a> {
    /// Rows of `a` (each `k` values) and of `c` (each `n` values).
    a: Vec<&'a [f32]>,
    c: Vec<&'a mut [f32]>,
    b: &'a Matrix,
}

impl<'a> PanelProduct<'a> {
    /// Runs the product if [`operands`] has them and SIMD is available; false (and `c`
    /// untouched) otherwise.
    fn run(a: &'a ArrayRef2<f32>, b: &'a Matrix, c: &'a mut ArrayRef2<f32>) -> bool {
        let Some((a, c)) = operands(a, b, c) else { return false };
        pulp::Arch::new().dispatch(PanelProduct { a, c, b })
    }
}

/// The rows of `a` and of `c`, as slices.
type Operands<'a> = (Vec<&'a [f32]>, Vec<&'a mut [f32]>);

/// The rows of `a` and `c` as slices, for the panel kernels: `None` unless every row is
/// contiguous, the shapes agree with `b` and `b` is whole panels (`b.k` > 0).
fn operands<'a>(a: &'a ArrayRef2<f32>, b: &Matrix, c: &'a mut ArrayRef2<f32>) -> Option<Operands<'a>> {
    if b.k == 0 || b.n % PANEL != 0 || a.ncols() != b.k || c.ncols() != b.n {
        return None;
    }
    let a_rows = a.rows().into_iter().map(|r| r.to_slice()).collect::<Option<Vec<_>>>()?;
    let c_rows = c.rows_mut().into_iter().map(|r| r.into_slice()).collect::<Option<Vec<_>>>()?;
    Some((a_rows, c_rows))
}

/// `row`'s non-zero values with their indices, into `out` (cleared first): a lone row's
/// product skips the zeros (a ReLU output is about half zeros).
fn non_zero(row: &[f32], out: &mut Vec<(usize, f32)>) {
    out.clear();
    out.extend(row.iter().enumerate().filter(|(_, x)| **x != 0.0).map(|(i, &x)| (i, x)));
}

impl pulp::WithSimd for PanelProduct<'_> {
    type Output = bool;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) -> bool {
        if S::IS_SCALAR || PANEL % S::F32_LANES != 0 || PANEL / S::F32_LANES > MAX_VECTORS {
            return false;
        }
        let k = self.b.nrows();
        let panels: Vec<&[S::f32s]> =
            self.b.f32_panels().chunks_exact(k * PANEL).map(|p| S::as_simd_f32s(p).0).collect();
        let (mut a, mut c) = (self.a.as_slice(), self.c);
        let mut c = c.as_mut_slice();
        let mut nonzero = Vec::new();
        while !a.is_empty() {
            let take = a.len().min(BLOCK_ROWS);
            let (a_block, a_rest) = a.split_at(take);
            let (c_block, c_rest) = c.split_at_mut(take);
            match take {
                4 => panels_by::<S, 4, 1>(simd, a_block, &panels, c_block),
                3 => panels_by::<S, 3, 2>(simd, a_block, &panels, c_block),
                2 => panels_by::<S, 2, 2>(simd, a_block, &panels, c_block),
                _ => {
                    // A lone row (a sentence-level layer): only its non-zero values, four panels
                    // at a time for independent sums.
                    non_zero(a_block[0], &mut nonzero);
                    let mut groups = panels.chunks_exact(4);
                    let mut first = 0;
                    for group in groups.by_ref() {
                        sparse::<S, 4>(simd, &nonzero, group, c_block, first);
                        first += 4;
                    }
                    for panel in groups.remainder() {
                        sparse::<S, 1>(simd, &nonzero, std::slice::from_ref(panel), c_block, first);
                        first += 1;
                    }
                }
            }
            (a, c) = (a_rest, c_rest);
        }
        true
    }
}

/// The most SIMD vectors a panel row may take (`PANEL` / lanes: 2 with AVX2, 4 with NEON).
const MAX_VECTORS: usize = 4;

/// `c[r] += a[r] @ b` for the `R` rows of a block, `P` panels at a time (the rest one by one).
#[inline(always)]
fn panels_by<S: pulp::Simd, const R: usize, const P: usize>(
    simd: S,
    a: &[&[f32]],
    panels: &[&[S::f32s]],
    c: &mut [&mut [f32]],
) {
    let a: [&[f32]; R] = std::array::from_fn(|r| a[r]);
    let mut groups = panels.chunks_exact(P);
    let mut first = 0;
    for group in groups.by_ref() {
        block::<S, R, P>(simd, &a, group, c, first);
        first += P;
    }
    for panel in groups.remainder() {
        block::<S, R, 1>(simd, &a, std::slice::from_ref(panel), c, first);
        first += 1;
    }
}

/// `c[r][panels first..first + P] += a[r] @ panels`: the `R` × `P` panel-wide sums stay in
/// registers while `k` runs down the panels.
#[inline(always)]
fn block<S: pulp::Simd, const R: usize, const P: usize>(
    simd: S,
    a: &[&[f32]; R],
    panels: &[&[S::f32s]],
    c: &mut [&mut [f32]],
    first: usize,
) {
    let vectors = PANEL / S::F32_LANES;
    let panels: [&[S::f32s]; P] = std::array::from_fn(|q| panels[q]);
    let mut acc = [[[simd.splat_f32s(0.0); MAX_VECTORS]; P]; R];
    load::<S, P>(&mut acc, c, first);
    for i in 0..a[0].len() {
        for (sums, row) in acc.iter_mut().zip(a) {
            let x = simd.splat_f32s(row[i]);
            for (panel_sums, panel) in sums.iter_mut().zip(&panels) {
                for (sum, &w) in panel_sums[..vectors].iter_mut().zip(&panel[i * vectors..(i + 1) * vectors]) {
                    *sum = simd.mul_add_e_f32s(x, w, *sum);
                }
            }
        }
    }
    store::<S, P>(&acc, c, first);
}

/// `c[0][panels first..first + P] += a @ panels` for one row of `a`, given as its non-zero
/// `(index, value)` pairs.
#[inline(always)]
fn sparse<S: pulp::Simd, const P: usize>(
    simd: S,
    nonzero: &[(usize, f32)],
    panels: &[&[S::f32s]],
    c: &mut [&mut [f32]],
    first: usize,
) {
    let vectors = PANEL / S::F32_LANES;
    let panels: [&[S::f32s]; P] = std::array::from_fn(|q| panels[q]);
    let mut acc = [[[simd.splat_f32s(0.0); MAX_VECTORS]; P]; 1];
    load::<S, P>(&mut acc, c, first);
    for &(i, x) in nonzero {
        let x = simd.splat_f32s(x);
        for (panel_sums, panel) in acc[0].iter_mut().zip(&panels) {
            for (sum, &w) in panel_sums[..vectors].iter_mut().zip(&panel[i * vectors..(i + 1) * vectors]) {
                *sum = simd.mul_add_e_f32s(x, w, *sum);
            }
        }
    }
    store::<S, P>(&acc, c, first);
}

/// The sums of panels `first..first + P` of each row of `c`, into `acc`.
#[inline(always)]
fn load<S: pulp::Simd, const P: usize>(acc: &mut [[[S::f32s; MAX_VECTORS]; P]], c: &[&mut [f32]], first: usize) {
    let vectors = PANEL / S::F32_LANES;
    for (sums, c_row) in acc.iter_mut().zip(c) {
        for (q, panel_sums) in sums.iter_mut().enumerate() {
            let at = (first + q) * PANEL;
            panel_sums[..vectors].copy_from_slice(S::as_simd_f32s(&c_row[at..at + PANEL]).0);
        }
    }
}

/// `acc` back into panels `first..first + P` of each row of `c`.
#[inline(always)]
fn store<S: pulp::Simd, const P: usize>(acc: &[[[S::f32s; MAX_VECTORS]; P]], c: &mut [&mut [f32]], first: usize) {
    let vectors = PANEL / S::F32_LANES;
    for (sums, c_row) in acc.iter().zip(c.iter_mut()) {
        for (q, panel_sums) in sums.iter().enumerate() {
            let at = (first + q) * PANEL;
            S::as_mut_simd_f32s(&mut c_row[at..at + PANEL]).0.copy_from_slice(&panel_sums[..vectors]);
        }
    }
}

fn inconsistent(what: String) -> SemanticError {
    SemanticError::Inconsistent(what)
}

/// Checks a matrix's shape.
fn shape(name: &str, m: &Matrix, rows: usize, cols: usize) -> Result<(), SemanticError> {
    if (m.k, m.n) == (rows, cols) {
        Ok(())
    } else {
        Err(inconsistent(format!("{name} is {} x {}, expected {rows} x {cols}", m.nrows(), m.ncols())))
    }
}

/// A little-endian reader over the weights file that never reads past its end.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, len: usize, what: &'static str) -> Result<&'a [u8], SemanticError> {
        let truncated = SemanticError::Truncated { what, offset: self.pos };
        let end = self.pos.checked_add(len).ok_or(truncated.clone())?;
        let part = self.bytes.get(self.pos..end).ok_or(truncated)?;
        self.pos = end;
        Ok(part)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], SemanticError> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    fn u16(&mut self, what: &'static str) -> Result<u16, SemanticError> {
        self.array(what).map(u16::from_le_bytes)
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, SemanticError> {
        self.array(what).map(u32::from_le_bytes)
    }

    fn f32(&mut self, what: &'static str) -> Result<f32, SemanticError> {
        self.array(what).map(f32::from_le_bytes)
    }

    fn f32s(&mut self, n: usize, what: &'static str) -> Result<Vec<f32>, SemanticError> {
        let bytes = self.take(n.saturating_mul(4), what)?;
        Ok(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
    }

    /// An int8 matrix (rows × cols, then a scale per column), dequantized to `f32`.
    fn matrix(&mut self, name: &'static str) -> Result<Matrix, SemanticError> {
        let rows = self.u32(name)? as usize;
        let cols = self.u32(name)? as usize;
        if cols < 2 {
            return Err(inconsistent(format!("{name} has {cols} column(s): expected a matrix")));
        }
        let q = self.take(rows.saturating_mul(cols), name)?;
        let scale = self.f32s(cols, name)?;
        Ok(Matrix::from_quantized(q, &scale, rows, cols))
    }

    /// An `f32` vector of `len` values (stored as `len` × 1).
    fn vector(&mut self, name: &'static str, len: usize) -> Result<Vec<f32>, SemanticError> {
        let rows = self.u32(name)? as usize;
        let cols = self.u32(name)? as usize;
        if (rows, cols) != (len, 1) {
            return Err(inconsistent(format!("{name} is {rows} x {cols}, expected {len} x 1")));
        }
        self.f32s(rows, name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(v: &[f32]) -> f32 {
        v.iter().map(|x| x * x).sum::<f32>().sqrt()
    }

    #[test]
    fn matches_the_original_float_encoder() {
        let reference: Vec<serde_json::Value> =
            serde_json::from_str(include_str!("../../assets/semantic/reference.json")).unwrap();
        assert_eq!(reference.len(), 9);
        let enc = embedded();
        for item in &reference {
            let text = item["text"].as_str().unwrap();
            let want: Vec<f32> =
                item["vector"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect();
            let got = enc.encode(text);
            assert_eq!(got.len(), DIM);
            let cos = cosine(&got, &want) / norm(&want);
            println!("cosine {cos:.4}  {text:?}");
            assert!(cos >= 0.95, "{text:?}: cosine {cos} with the original encoder");
        }
    }

    #[test]
    fn tokenizes_like_the_reference_port() {
        // Token ids of the numpy port of the same file (readbin.py, `Enc.tok`).
        let enc = embedded();
        assert_eq!(enc.tokens("明天上海冷不冷"), [1, 3, 680, 379, 10579, 2267, 85, 2267, 2]);
        assert_eq!(enc.tokens("Will it rain in Shanghai tomorrow?"), [1, 4810, 36, 9641, 13, 29715, 12, 10784, 17, 2]);
        assert_eq!(enc.tokens("100美元换成人民币是多少"), [1, 881, 20045, 2849, 859, 8964, 12807, 78, 276, 783, 2]);
        assert_eq!(enc.tokens("CA1234什么时候到"), [1, 6305, 29112, 394, 360, 6943, 193, 2]);
        assert_eq!(
            enc.tokens("ｆｕｌｌ－ｗｉｄｔｈ　ＴＥＸＴ ２０２６"),
            [1, 1787, 15, 14075, 377, 26558, 469, 3001, 2]
        );
        assert_eq!(enc.tokens("  spaces   and\ttabs  "), [1, 20789, 14, 7427, 6, 2]);
        assert_eq!(enc.tokens("。，！？"), [1, 3, 23, 4, 37, 17, 2]);
        assert_eq!(enc.tokens("😀😀"), [1, 3, 0, 0, 2]);
        assert_eq!(enc.tokens(""), [1, 0, 2]);
        assert_eq!(enc.tokens(" \t\n "), [1, 0, 2]);
        // The markers' texts are not pieces a text can contain (as in SentencePiece).
        let ids = enc.tokens("<s> hi </s> <unk>");
        assert!(ids[1..ids.len() - 1].iter().all(|&id| id > 2), "{ids:?}");
    }

    #[test]
    fn similar_meanings_score_higher() {
        let enc = embedded();
        let pair = |q: &str, near: &str, far: &str| {
            let [q, near, far] = [q, near, far].map(|t| enc.encode(t));
            (cosine(&q, &near), cosine(&q, &far))
        };
        let (near, far) = pair("明天上海冷不冷", "查询天气预报", "货币汇率兑换");
        println!("zh: weather {near:.3}, exchange {far:.3}");
        assert!(near > far + 0.1, "zh: {near} vs {far}");
        let (near, far) =
            pair("Will it be cold in Shanghai tomorrow?", "check the weather forecast", "currency exchange rate");
        println!("en: weather {near:.3}, exchange {far:.3}");
        assert!(near > far + 0.1, "en: {near} vs {far}");
        // Across languages.
        let (near, far) = pair("明天上海冷不冷", "weather forecast", "currency exchange rate");
        println!("zh-en: weather {near:.3}, exchange {far:.3}");
        assert!(near > far, "zh-en: {near} vs {far}");
    }

    #[test]
    fn odd_texts_give_unit_vectors() {
        let enc = embedded();
        let long = "天气预报说明天下雨，".repeat(400);
        assert_eq!(long.chars().count(), 4_000);
        let long_en = "the quick brown fox jumps over the lazy dog ".repeat(100);
        for text in ["", "   ", "😀🎉😀", "!!!???...,,,", "。，、！？；：", "\u{0}\u{1f}\u{200b}", &long, &long_en]
        {
            let v = enc.encode(text);
            assert_eq!(v.len(), DIM);
            assert!(v.iter().all(|x| x.is_finite()), "{text:?}");
            assert!((norm(&v) - 1.0).abs() < 1e-4, "{text:?}: norm {}", norm(&v));
        }
        assert_eq!(enc.tokens(&long).len(), MAX_TOKENS);
        assert_eq!(enc.tokens(&long_en).len(), MAX_TOKENS);
        // The cut keeps the start of the text: more text after it changes nothing.
        assert_eq!(enc.tokens(&long), enc.tokens(&long.repeat(50)));
    }

    #[test]
    fn the_panel_product_matches_sgemm() {
        // Pseudo-random values with some zeros (as after a ReLU), from a fixed LCG.
        let mut state = 0x2545_f491_u32;
        let mut next = move || {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let v = f32::from((state >> 16) as u16) / 32768.0 - 1.0;
            if v < -0.5 {
                0.0
            } else {
                v
            }
        };
        for (m, k, n) in [(1, 40, 64), (2, 17, 16), (3, 33, 80), (4, 8, 32), (5, 64, 48), (9, 20, 96)] {
            let a = Array2::from_shape_fn((m, k), |_| next());
            let b_rows = Array2::from_shape_fn((k, n), |_| next());
            let b = Matrix::new(&b_rows);
            // c is a column slice of a wider buffer, as the encoder writes an order's features.
            let wide = Array2::from_shape_fn((m, n + 16), |_| next());
            let mut expected = wide.clone();
            general_mat_mul(1.0, &a, &b_rows, 1.0, &mut expected.slice_axis_mut(Axis(1), Slice::from(8..8 + n)));
            let mut got = wide.clone();
            let ran = PanelProduct::run(&a, &b, &mut got.slice_axis_mut(Axis(1), Slice::from(8..8 + n)));
            if !ran {
                // No SIMD on this machine: the product is declined, c untouched.
                assert_eq!(got, wide);
                continue;
            }
            for (g, e) in got.iter().zip(&expected) {
                assert!((g - e).abs() <= 1e-4 * (1.0 + e.abs()), "{m}x{k}x{n}: {g} vs {e}");
            }
        }
        // Widths that are not whole panels are declined.
        let (a, b) = (Array2::<f32>::ones((2, 3)), Matrix::new(&Array2::ones((3, 20))));
        assert!(!PanelProduct::run(&a, &b, &mut Array2::zeros((2, 20))));
        // The panel-wise sgemm handles them, the padding of the last panel left out.
        let mut c = Array2::zeros((2, 20));
        matmul(&a, &b, &mut c);
        assert_eq!(c, Array2::from_elem((2, 20), 3.0));
    }

    #[test]
    fn the_quantized_product_matches_sgemm() {
        let mut state = 0x9e37_79b9_u32;
        let mut next = move || {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (state >> 24) as u8
        };
        for (m, k, n) in [(1, 40, 64), (2, 17, 16), (3, 33, 80), (4, 8, 32), (5, 64, 48), (9, 20, 96)] {
            let q: Vec<u8> = (0..k * n).map(|_| next()).collect();
            let scale: Vec<f32> = (0..n).map(|j| 0.001 * (j % 7 + 1) as f32).collect();
            let b = Matrix::from_quantized(&q, &scale, k, n);
            let b_rows = Array2::from_shape_fn((k, n), |(i, j)| f32::from(q[i * n + j] as i8) * scale[j]);
            // Activations with zeros, as after a ReLU.
            let a = Array2::from_shape_fn(
                (m, k),
                |(r, i)| if (r + i) % 3 == 0 { 0.0 } else { (next() as f32 - 128.0) / 64.0 },
            );
            let wide = Array2::from_shape_fn((m, n + 16), |(r, j)| (r * 7 + j) as f32 / 10.0);
            let mut expected = wide.clone();
            general_mat_mul(1.0, &a, &b_rows, 1.0, &mut expected.slice_axis_mut(Axis(1), Slice::from(8..8 + n)));
            let mut got = wide.clone();
            if !quantized::run(&a, &b, &mut got.slice_axis_mut(Axis(1), Slice::from(8..8 + n))) {
                assert_eq!(got, wide, "declined: c untouched");
                continue;
            }
            for (g, e) in got.iter().zip(&expected) {
                assert!((g - e).abs() <= 1e-4 * (1.0 + e.abs()), "{m}x{k}x{n}: {g} vs {e}");
            }
        }
        // A matrix not read from a weights file has no 8-bit panels: declined.
        let (a, b) = (Array2::<f32>::ones((2, 3)), Matrix::new(&Array2::ones((3, 16))));
        assert!(!quantized::run(&a, &b, &mut Array2::zeros((2, 16))));
    }

    #[test]
    fn batches_give_the_same_vectors() {
        let enc = embedded();
        let long = "帮我查一下明天从北京到上海的航班，".repeat(30);
        let texts = ["明天上海冷不冷", "", "hello", &long, "I need a ride from Baiyun airport", "CA1234什么时候到"];
        let many = enc.encode_many(&texts);
        assert_eq!(many.len(), texts.len());
        for (text, got) in texts.iter().zip(&many) {
            let one = enc.encode(text);
            let diff = one.iter().zip(got).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
            assert!(diff < 1e-5, "{text:?}: differs by {diff}");
        }
        // More tokens than one batch holds (5 x 256 > BATCH_TOKENS).
        let texts: Vec<String> = (0..5).map(|i| format!("{i}{long}")).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        assert!(refs.iter().map(|t| enc.tokens(t).len()).sum::<usize>() > BATCH_TOKENS);
        let many = enc.encode_many(&refs);
        assert_eq!(many.len(), 5);
        assert!(cosine(&many[4], &enc.encode(refs[4])) > 0.9999);
        assert!(cosine(&many[0], &many[4]) < 0.9999);
        assert!(enc.encode_many(&[]).is_empty());
    }

    #[test]
    fn malformed_files_are_errors() {
        let enc = Encoder::from_bytes(EMBEDDED).unwrap();
        assert_eq!(format!("{enc:?}"), "Encoder { pieces: 57085, dim: 512, out: 512, .. }");
        for cut in [0, 5, 8, 12, 16, 1_000, EMBEDDED.len() / 2, EMBEDDED.len() - 5, EMBEDDED.len() - 1] {
            let err = Encoder::from_bytes(&EMBEDDED[..cut]).unwrap_err();
            assert!(matches!(err, SemanticError::Truncated { .. }), "cut at {cut}: {err}");
        }
        let mut bad = EMBEDDED.to_vec();
        bad[0] = b'X';
        assert_eq!(Encoder::from_bytes(&bad).unwrap_err(), SemanticError::BadMagic);
        let mut bad = EMBEDDED[..64].to_vec();
        bad[8] = 2;
        assert_eq!(Encoder::from_bytes(&bad).unwrap_err(), SemanticError::BadVersion(2));
        let mut bad = EMBEDDED.to_vec();
        bad.push(0);
        assert!(matches!(Encoder::from_bytes(&bad), Err(SemanticError::Inconsistent(_))));
        // A huge piece count fails on the missing bytes, without allocating for it.
        let mut bad = EMBEDDED[..64].to_vec();
        bad[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(Encoder::from_bytes(&bad), Err(SemanticError::Truncated { .. })));
        let mut bad = EMBEDDED.to_vec();
        bad[12..16].copy_from_slice(&2u32.to_le_bytes());
        assert!(matches!(Encoder::from_bytes(&bad), Err(SemanticError::Inconsistent(_))));
        // A piece that is not UTF-8 (piece 3 starts after the count and three 2+len+4 records).
        let mut bad = EMBEDDED.to_vec();
        let third = 16 + (2 + 5 + 4) + (2 + 3 + 4) + (2 + 4 + 4);
        bad[third + 2] = 0xff;
        assert_eq!(Encoder::from_bytes(&bad).unwrap_err(), SemanticError::BadPiece { index: 3 });
    }
}
