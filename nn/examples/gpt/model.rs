//! The model: a GPT-style decoder over characters, every step in tessera kernels.
//!
//! Token and position embeddings summed into the residual stream; `layers` blocks of
//! (LayerNorm, a fused query-key-value projection, causal multi-head attention, an output
//! projection, a residual add; LayerNorm, a GELU MLP four times as wide, a residual add);
//! a final LayerNorm and a projection to the vocabulary's logits; softmax cross-entropy
//! against the next character.
//!
//! Each residual add runs inside the LayerNorm after it (`forward_residual`), which writes
//! the stream and its normed rows in one pass: the embeddings' sum in the first block's
//! first norm, each block's halves in the norm that follows them. The backward carries the
//! stream's gradient down in one buffer, each norm adding its own to it
//! (`SumGradient::Add`).

use crate::buffers::upload;
use rand::RngExt;
use tessera::{Batch, GpuBuffer, Result, Runtime};
use tessera_nn::{
    Activation, Attention, AttentionBackward, AttentionForward, AttentionMask, AttentionShape,
    Embedding, EmbeddingBackward, EmbeddingForward, EmbeddingShape, Heads, HeadsLayout, Init,
    LayerNormLayer, Linear, LinearConfig, LossBackward, LossForward, LossShape, Parameter,
    Precision, SoftmaxCrossEntropy, SumGradient,
};

/// The model's sizes and how it multiplies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GptConfig {
    /// Distinct characters.
    pub vocab: u32,
    /// The longest sequence the model reads (its position table's rows).
    pub context: u32,
    /// Values of each token in the residual stream.
    pub dim: u32,
    /// Attention heads; must divide `dim`.
    pub heads: u32,
    /// Blocks.
    pub layers: u32,
    /// How the projections multiply (attention is strict f32).
    pub precision: Precision,
}

impl GptConfig {
    /// Values of each head.
    pub fn head_dim(&self) -> u32 {
        self.dim / self.heads
    }
}

/// The standard deviation of the embedding tables' initial values (GPT-2's).
const EMBEDDING_STD: f32 = 0.02;

/// A learned table with its gradient.
#[derive(Debug)]
struct Table {
    value: GpuBuffer<f32>,
    grad: GpuBuffer<f32>,
    shape: [usize; 2],
}

impl Table {
    /// `rows x cols` values uniform with standard deviation [`EMBEDDING_STD`].
    fn new(rt: &Runtime, rows: u32, cols: u32, seed: u64) -> Result<Self> {
        let bound = EMBEDDING_STD * 3f32.sqrt();
        let mut rng = crate::text::rng(seed);
        let len = (rows * cols) as usize;
        let values: Vec<f32> = (0..len).map(|_| rng.random_range(-bound..bound)).collect();
        Ok(Table {
            value: rt.upload(&values)?,
            grad: rt.zeros(len)?,
            shape: [rows as usize, cols as usize],
        })
    }

    fn parameter(&mut self) -> Parameter<'_> {
        Parameter {
            name: "table",
            shape: self.shape.to_vec(),
            value: &mut self.value,
            grad: &mut self.grad,
        }
    }
}

/// One transformer block's layers and what its forward pass keeps for the backward.
#[derive(Debug)]
struct Block {
    ln1: LayerNormLayer,
    /// `[tokens, dim] -> [tokens, 3 * dim]`: the queries, keys and values side by side.
    qkv: Linear,
    proj: Linear,
    ln2: LayerNormLayer,
    /// `[tokens, dim] -> [tokens, 4 * dim]`, GELU.
    fc: Linear,
    out: Linear,
    /// `[sequences, heads, seq, head_dim]` each.
    q: GpuBuffer<f32>,
    k: GpuBuffer<f32>,
    v: GpuBuffer<f32>,
    attended: GpuBuffer<f32>,
    /// `[sequences, heads, seq]`.
    lse: GpuBuffer<f32>,
    /// `attended` as token rows, `[tokens, dim]`.
    merged: GpuBuffer<f32>,
    /// The residual stream into the block (`ln1`'s sum), `[tokens, dim]`.
    x: GpuBuffer<f32>,
    /// The residual stream after the attention half (`ln2`'s sum), `[tokens, dim]`.
    mid: GpuBuffer<f32>,
}

/// The gradients the blocks' backward passes write and read, shared by the blocks (each
/// finishes with them before the next starts).
#[derive(Debug)]
struct Scratch {
    /// The gradients of `attended`, `q`, `k`, `v`.
    attended: GpuBuffer<f32>,
    q: GpuBuffer<f32>,
    k: GpuBuffer<f32>,
    v: GpuBuffer<f32>,
    /// The gradient of the fused projection's output, `[tokens, 3 * dim]`.
    qkv: GpuBuffer<f32>,
}

/// The ops every block shares (no parameters).
#[derive(Debug)]
struct Ops {
    embedding: Embedding,
    attention: Attention,
    heads: Heads,
    loss: SoftmaxCrossEntropy,
}

/// The model with its parameters, gradients and buffers on the GPU.
#[derive(Debug)]
pub struct Gpt {
    pub config: GptConfig,
    ops: Ops,
    tokens: Table,
    positions: Table,
    blocks: Vec<Block>,
    ln_f: LayerNormLayer,
    head: Linear,
    scratch: Scratch,
    /// Sequences and tokens of each in the loaded batch.
    sequences: u32,
    seq: u32,
    /// `[tokens]`: the characters, their positions, the characters that follow them.
    ids: GpuBuffer<u32>,
    position_ids: GpuBuffer<u32>,
    targets: GpuBuffer<u32>,
    /// The token and position embeddings, `[tokens, dim]` each.
    token_rows: GpuBuffer<f32>,
    position_rows: GpuBuffer<f32>,
    /// The residual stream out of the last block (`ln_f`'s sum), `[tokens, dim]`.
    top: GpuBuffer<f32>,
    /// The gradient of the residual stream, `[tokens, dim]`, carried down through the blocks.
    grad_stream: GpuBuffer<f32>,
    probs: GpuBuffer<f32>,
    losses: GpuBuffer<f32>,
    grad_logits: GpuBuffer<f32>,
}

impl Gpt {
    /// A model with its parameters drawn from `seed`: the projections as PyTorch's `Linear`
    /// starts them, the embedding tables with a standard deviation of 0.02.
    pub fn new(rt: &Runtime, config: GptConfig, seed: u64) -> Result<Self> {
        let GptConfig {
            vocab,
            context,
            dim,
            heads,
            layers,
            precision,
        } = config;
        if heads == 0 || dim % heads != 0 || dim / heads > tessera_nn::MAX_HEAD_DIM {
            return Err(tessera::Error::InvalidArgument {
                operation: "gpt".into(),
                problem: format!(
                    "{heads} heads of a {dim}-wide stream: the heads must divide it, at most \
                     {} values each",
                    tessera_nn::MAX_HEAD_DIM
                ),
            });
        }
        let mut next_seed = seed.wrapping_mul(1000);
        let mut init = || {
            next_seed += 1;
            Init::Uniform { seed: next_seed }
        };
        let mut linear = |inputs: u32, outputs: u32, activation: Activation| {
            let config = LinearConfig::new(inputs, outputs)
                .activation(activation)
                .precision(precision)
                .init(init());
            Linear::new(rt, config)
        };
        let mut blocks = Vec::with_capacity(layers as usize);
        for _ in 0..layers {
            blocks.push(Block {
                ln1: LayerNormLayer::new(rt, dim)?,
                qkv: linear(dim, 3 * dim, Activation::None)?,
                proj: linear(dim, dim, Activation::None)?,
                ln2: LayerNormLayer::new(rt, dim)?,
                fc: linear(dim, 4 * dim, Activation::Gelu)?,
                out: linear(4 * dim, dim, Activation::None)?,
                q: rt.zeros(1)?,
                k: rt.zeros(1)?,
                v: rt.zeros(1)?,
                attended: rt.zeros(1)?,
                lse: rt.zeros(1)?,
                merged: rt.zeros(1)?,
                x: rt.zeros(1)?,
                mid: rt.zeros(1)?,
            });
        }
        let head = linear(dim, vocab, Activation::None)?;
        let ops = Ops {
            embedding: Embedding::new(rt)?,
            attention: Attention::with_precision(rt, precision)?,
            heads: Heads::new(rt)?,
            loss: SoftmaxCrossEntropy::new(rt)?,
        };
        let scratch = Scratch {
            attended: rt.zeros(1)?,
            q: rt.zeros(1)?,
            k: rt.zeros(1)?,
            v: rt.zeros(1)?,
            qkv: rt.zeros(1)?,
        };
        Ok(Gpt {
            config,
            ops,
            tokens: Table::new(rt, vocab, dim, seed.wrapping_mul(1000).wrapping_add(998))?,
            positions: Table::new(rt, context, dim, seed.wrapping_mul(1000).wrapping_add(999))?,
            blocks,
            ln_f: LayerNormLayer::new(rt, dim)?,
            head,
            scratch,
            sequences: 0,
            seq: 0,
            ids: rt.zeros(1)?,
            position_ids: rt.zeros(1)?,
            targets: rt.zeros(1)?,
            token_rows: rt.zeros(1)?,
            position_rows: rt.zeros(1)?,
            top: rt.zeros(1)?,
            grad_stream: rt.zeros(1)?,
            probs: rt.zeros(1)?,
            losses: rt.zeros(1)?,
            grad_logits: rt.zeros(1)?,
        })
    }

    /// Every learned tensor with its gradient, named as the checkpoint stores them
    /// (`blocks.0.qkv.weight`, ...).
    pub fn parameters(&mut self) -> Vec<(String, Parameter<'_>)> {
        let mut named = vec![
            ("token_embedding".to_owned(), self.tokens.parameter()),
            ("position_embedding".to_owned(), self.positions.parameter()),
        ];
        for (i, block) in self.blocks.iter_mut().enumerate() {
            let Block {
                ln1,
                qkv,
                proj,
                ln2,
                fc,
                out,
                ..
            } = block;
            let prefix = |name: &str| format!("blocks.{i}.{name}");
            named.extend(prefixed(prefix("ln1"), ln1.parameters()));
            named.extend(prefixed(prefix("qkv"), qkv.parameters()));
            named.extend(prefixed(prefix("proj"), proj.parameters()));
            named.extend(prefixed(prefix("ln2"), ln2.parameters()));
            named.extend(prefixed(prefix("fc"), fc.parameters()));
            named.extend(prefixed(prefix("out"), out.parameters()));
        }
        named.extend(prefixed("ln_f".into(), self.ln_f.parameters()));
        named.extend(prefixed("head".into(), self.head.parameters()));
        named
    }

    /// Copies `sequences` sequences of `seq` characters (`inputs`) and the characters that
    /// follow each (`targets`) to the GPU; the buffers follow the size.
    pub fn load(
        &mut self,
        rt: &Runtime,
        sequences: u32,
        inputs: &[u32],
        targets: &[u32],
    ) -> Result<()> {
        let tokens = inputs.len();
        let seq = tokens / sequences.max(1) as usize;
        if sequences == 0
            || tokens == 0
            || !tokens.is_multiple_of(sequences as usize)
            || targets.len() != tokens
            || seq > self.config.context as usize
        {
            return Err(tessera::Error::InvalidArgument {
                operation: "gpt".into(),
                problem: format!(
                    "{tokens} inputs and {} targets as {sequences} sequences: each must be \
                     1 to {} tokens, inputs and targets as many",
                    targets.len(),
                    self.config.context
                ),
            });
        }
        let positions: Vec<u32> = (0..tokens).map(|t| (t % seq) as u32).collect();
        upload(&mut self.ids, rt, inputs)?;
        upload(&mut self.targets, rt, targets)?;
        upload(&mut self.position_ids, rt, &positions)?;
        (self.sequences, self.seq) = (sequences, seq as u32);
        let (dim, heads) = (self.config.dim as usize, self.config.heads as usize);
        let rows = tokens * dim;
        for buffer in [
            &mut self.token_rows,
            &mut self.position_rows,
            &mut self.top,
            &mut self.grad_stream,
        ] {
            sized(buffer, rt, rows)?;
        }
        for block in &mut self.blocks {
            for buffer in [
                &mut block.q,
                &mut block.k,
                &mut block.v,
                &mut block.attended,
                &mut block.merged,
                &mut block.x,
                &mut block.mid,
            ] {
                sized(buffer, rt, rows)?;
            }
            sized(&mut block.lse, rt, tokens * heads)?;
        }
        let Scratch {
            attended,
            q,
            k,
            v,
            qkv,
        } = &mut self.scratch;
        for buffer in [attended, q, k, v] {
            sized(buffer, rt, rows)?;
        }
        sized(qkv, rt, 3 * rows)?;
        let logits = tokens * self.config.vocab as usize;
        sized(&mut self.probs, rt, logits)?;
        sized(&mut self.grad_logits, rt, logits)?;
        sized(&mut self.losses, rt, tokens)
    }

    fn tokens(&self) -> u32 {
        self.sequences * self.seq
    }

    /// What every gradient carries beyond the mean loss's (loss scaling): 1 in f32; on the
    /// tensor cores, the batch's tokens, which makes the logits' gradient `probs -
    /// one_hot(target)`: the mean's would fall below f16's normal range, to which the tensor
    /// cores round what they multiply, and the model would learn far less. The optimizer's
    /// clipping takes it off (`GradClip::clip_scaled`).
    pub fn loss_scale(&self) -> f32 {
        match self.config.precision {
            Precision::F32 => 1.0,
            Precision::TensorCoreF16 => self.tokens() as f32,
        }
    }

    fn loss_shape(&self) -> LossShape {
        LossShape {
            rows: self.tokens(),
            classes: self.config.vocab,
        }
    }

    /// Where the heads sit in the blocks' buffers for the loaded batch.
    fn geometry(&self) -> Geometry {
        let GptConfig { dim, heads, .. } = self.config;
        let attention = AttentionShape {
            batch: self.sequences,
            heads,
            kv_heads: heads,
            queries: self.seq,
            keys: self.seq,
            head_dim: self.config.head_dim(),
        };
        Geometry {
            attention,
            heads: HeadsLayout::packed(self.sequences, self.seq, heads, self.config.head_dim()),
            dim,
        }
    }

    /// Records the forward pass and the loss of the loaded batch.
    pub fn record_forward(&mut self, batch: &mut Batch<'_>) -> Result<()> {
        let geometry = self.geometry();
        let loss_shape = self.loss_shape();
        let embedding = |vocab: u32| EmbeddingShape {
            tokens: self.tokens(),
            vocab,
            dim: self.config.dim,
        };
        let (token_shape, position_shape) =
            (embedding(self.config.vocab), embedding(self.config.context));
        let Gpt {
            ops,
            tokens,
            positions,
            blocks,
            ln_f,
            head,
            ids,
            position_ids,
            targets,
            token_rows,
            position_rows,
            top,
            probs,
            losses,
            ..
        } = self;
        let args = EmbeddingForward {
            shape: token_shape,
            ids,
            table: &tokens.value,
            out: token_rows,
        };
        ops.embedding.forward(batch, args)?;
        let args = EmbeddingForward {
            shape: position_shape,
            ids: position_ids,
            table: &positions.value,
            out: position_rows,
        };
        ops.embedding.forward(batch, args)?;
        // Each block's stream is the sum of the two before it: the embeddings, or the last
        // block's halves.
        let embedded = (&*token_rows, &*position_rows);
        for l in 0..blocks.len() {
            let (done, rest) = blocks.split_at_mut(l);
            let summands = done.last().map_or(Ok(embedded), Block::output)?;
            rest[0].forward(batch, ops, &geometry, summands)?;
        }
        let (x, residual) = blocks.last().map_or(Ok(embedded), Block::output)?;
        let normed = ln_f.forward_residual(batch, x, residual, top)?;
        let logits = head.forward(batch, normed)?;
        let args = LossForward {
            shape: loss_shape,
            logits,
            labels: targets,
            probs,
            losses,
        };
        ops.loss.forward(batch, args)
    }

    /// Records the backward pass into every parameter's gradient; call after
    /// [`record_forward`](Self::record_forward).
    pub fn record_backward(&mut self, batch: &mut Batch<'_>) -> Result<()> {
        let geometry = self.geometry();
        let (loss_shape, loss_scale) = (self.loss_shape(), self.loss_scale());
        let embedding = |vocab: u32| EmbeddingShape {
            tokens: self.tokens(),
            vocab,
            dim: self.config.dim,
        };
        let (token_shape, position_shape) =
            (embedding(self.config.vocab), embedding(self.config.context));
        let Gpt {
            ops,
            tokens,
            positions,
            blocks,
            ln_f,
            head,
            scratch,
            ids,
            position_ids,
            targets,
            top,
            grad_stream,
            probs,
            grad_logits,
            ..
        } = self;
        let args = LossBackward {
            shape: loss_shape,
            probs,
            labels: targets,
            grad_logits,
        };
        ops.loss.backward_scaled(batch, args, loss_scale)?;
        let grad_normed = head.backward(batch, ln_f.output()?, grad_logits)?;
        // Nothing but `ln_f` reads the top of the stream: its gradient starts there.
        let into = SumGradient::Write(grad_stream);
        ln_f.backward_residual(batch, top, grad_normed, into)?;
        for block in blocks.iter_mut().rev() {
            block.backward(batch, ops, scratch, &geometry, grad_stream)?;
        }
        let args = EmbeddingBackward {
            shape: token_shape,
            ids,
            grad_out: grad_stream,
            grad_table: &mut tokens.grad,
        };
        ops.embedding.backward(batch, args)?;
        let args = EmbeddingBackward {
            shape: position_shape,
            ids: position_ids,
            grad_out: grad_stream,
            grad_table: &mut positions.grad,
        };
        ops.embedding.backward(batch, args)
    }

    /// Each token's loss of the last forward pass, in nats.
    pub fn losses(&self) -> &GpuBuffer<f32> {
        &self.losses
    }

    /// The mean loss (in nats a character) of the last forward pass.
    pub fn mean_loss(&self, rt: &Runtime) -> Result<f32> {
        SoftmaxCrossEntropy::mean(&self.losses.read(rt)?)
    }

    /// The probabilities the last forward pass gave the character after `token` (of the
    /// loaded batch's tokens, in order).
    pub fn next_char_probs(&self, rt: &Runtime, token: u32) -> Result<Vec<f32>> {
        let vocab = self.config.vocab as usize;
        let probs = self.probs.read(rt)?;
        let at = token as usize * vocab;
        Ok(probs.get(at..at + vocab).unwrap_or_default().to_vec())
    }
}

/// The shapes a block's ops take for the loaded batch.
struct Geometry {
    attention: AttentionShape,
    heads: HeadsLayout,
    dim: u32,
}

impl Geometry {
    /// Where the queries (0), keys (1) or values (2) sit in the fused projection's rows.
    fn projected(&self, part: u32) -> HeadsLayout {
        self.heads.within(3 * self.dim, part * self.dim)
    }
}

impl Block {
    /// Records the block's forward pass of the residual stream `summands.0 + summands.1`,
    /// which it keeps as `x`.
    fn forward(
        &mut self,
        batch: &mut Batch<'_>,
        ops: &Ops,
        geometry: &Geometry,
        summands: (&GpuBuffer<f32>, &GpuBuffer<f32>),
    ) -> Result<()> {
        let Block {
            ln1,
            qkv,
            proj,
            ln2,
            fc,
            out,
            q,
            k,
            v,
            attended,
            lse,
            merged,
            x,
            mid,
        } = self;
        let normed = ln1.forward_residual(batch, summands.0, summands.1, x)?;
        let projected = qkv.forward(batch, normed)?;
        for (part, heads) in [&mut *q, &mut *k, &mut *v].into_iter().enumerate() {
            let layout = geometry.projected(part as u32);
            ops.heads.to_heads(batch, layout, projected, heads)?;
        }
        let shape = geometry.attention;
        let args = AttentionForward {
            shape,
            mask: AttentionMask::Causal,
            scale: shape.default_scale(),
            q,
            k,
            v,
            key_lengths: None,
            out: attended,
            lse,
        };
        ops.attention.forward(batch, args)?;
        ops.heads.to_rows(batch, geometry.heads, attended, merged)?;
        let projected = proj.forward(batch, merged)?;
        let normed = ln2.forward_residual(batch, x, projected, mid)?;
        let hidden = fc.forward(batch, normed)?;
        out.forward(batch, hidden)?;
        Ok(())
    }

    /// The two halves of the residual stream out of the block, whose sum the next norm
    /// takes: the stream after attention, and the MLP's output.
    fn output(&self) -> Result<(&GpuBuffer<f32>, &GpuBuffer<f32>)> {
        Ok((&self.mid, self.out.output()?))
    }

    /// Records the block's backward pass into its parameters' gradients, `grad_stream`
    /// holding the gradient of the stream out of the block on entry and of the stream into
    /// it on return.
    fn backward(
        &mut self,
        batch: &mut Batch<'_>,
        ops: &Ops,
        scratch: &mut Scratch,
        geometry: &Geometry,
        grad_stream: &mut GpuBuffer<f32>,
    ) -> Result<()> {
        let Block {
            ln1,
            qkv,
            proj,
            ln2,
            fc,
            out,
            q,
            k,
            v,
            attended,
            lse,
            merged,
            x,
            mid,
        } = self;
        // The MLP half: the stream out is mid + out(fc(ln2(mid))).
        let grad_hidden = out.backward(batch, fc.output()?, grad_stream)?;
        let grad_normed = fc.backward(batch, ln2.output()?, grad_hidden)?;
        let into = SumGradient::Add(grad_stream);
        ln2.backward_residual(batch, mid, grad_normed, into)?;
        // The attention half: mid = x + proj(attention(ln1(x))).
        let grad_merged = proj.backward(batch, merged, grad_stream)?;
        ops.heads
            .to_heads(batch, geometry.heads, grad_merged, &mut scratch.attended)?;
        let shape = geometry.attention;
        let args = AttentionBackward {
            shape,
            mask: AttentionMask::Causal,
            scale: shape.default_scale(),
            q,
            k,
            v,
            key_lengths: None,
            out: attended,
            lse,
            grad_out: &scratch.attended,
            grad_q: &mut scratch.q,
            grad_k: &mut scratch.k,
            grad_v: &mut scratch.v,
        };
        ops.attention.backward(batch, args)?;
        for (part, grad) in [&scratch.q, &scratch.k, &scratch.v].into_iter().enumerate() {
            let layout = geometry.projected(part as u32);
            ops.heads.to_rows(batch, layout, grad, &mut scratch.qkv)?;
        }
        let grad_normed = qkv.backward(batch, ln1.output()?, &scratch.qkv)?;
        ln1.backward_residual(batch, x, grad_normed, SumGradient::Add(grad_stream))
    }
}

/// `params` named `prefix.name`.
fn prefixed<'a>(
    prefix: String,
    params: impl IntoIterator<Item = Parameter<'a>>,
) -> impl Iterator<Item = (String, Parameter<'a>)> {
    params
        .into_iter()
        .map(move |p| (format!("{prefix}.{}", p.name), p))
}

/// Makes `buffer` hold `len` elements, replacing it when it holds another number.
fn sized(buffer: &mut GpuBuffer<f32>, rt: &Runtime, len: usize) -> Result<()> {
    if buffer.len() != len {
        *buffer = rt.zeros(len)?;
    }
    Ok(())
}
