"""The scenes of chapter 3 and the captioner: pictures and captions agree, held-out scenes
are new, attention weights are distributions over the cells, and the captioner without
attention cannot tell where things are."""

from __future__ import annotations

import pytest
import torch

from transformer_lab.data import scenes
from transformer_lab.data.scenes import Scene, Thing
from transformer_lab.models.captioner import (
    Captioner,
    CaptionerConfig,
    ConvEncoder,
    caption_accuracy,
)
from transformer_lab.training.loop import train
from transformer_lab.training.losses import seq2seq_loss
from transformer_lab.training.run import Run


@pytest.fixture(scope="module")
def data():
    return scenes.load(0)


def _model(data, attention=True, seed=0, **kw):
    torch.manual_seed(seed)
    return Captioner(CaptionerConfig(len(data.vocab), attention=attention, **kw)).eval()


def test_the_data_is_the_same_for_a_seed_and_differs_across_seeds(data):
    again = scenes.load(0)
    assert again.scenes == data.scenes
    torch.testing.assert_close(again.images["test"], data.images["test"], rtol=0, atol=0)
    assert torch.equal(again.captions["train"], data.captions["train"])
    other = scenes.load(1)
    assert other.scenes["test"] != data.scenes["test"]


def test_held_out_scenes_never_occur_in_training(data):
    train_set, test_set = set(data.scenes["train"]), set(data.scenes["test"])
    assert not train_set & test_set
    assert train_set | test_set == set(scenes.all_scenes())
    assert len(test_set) == round(0.2 * len(scenes.all_scenes())) == 713
    # the held-out scenes are new as scenes, not as words: every word occurs in training
    assert all(w in data.vocab for s in test_set for w in scenes.caption(s))


def test_every_caption_parses_back_to_its_scene():
    every = scenes.all_scenes()
    assert len(every) == len(set(every)) == 27 * 12 * 11
    for scene in every:
        left, right = scenes.parse_caption(scenes.caption(scene))
        assert left == (scene.first.colour, scene.first.shape)
        assert right == (scene.second.colour, scene.second.shape)
        assert scene.first.col < scene.second.col  # "left of" is true of the scene


def test_captions_in_the_data_are_the_captions_of_its_scenes(data):
    for i in range(0, len(data.scenes["test"]), 50):
        words = data.vocab.decode(data.captions["test"][i])
        assert words == scenes.caption(data.scenes["test"][i])


def test_the_picture_shows_each_object_in_its_slot_and_colour():
    scene = Scene(Thing("red", "square", 2, 0), Thing("blue", "circle", 0, 2))
    image = scenes.render(scene, torch.Generator().manual_seed(0), jitter=0, noise=0.0)
    assert image.shape == (3, 24, 24)
    for thing in (scene.first, scene.second):
        centre = image[:, thing.row * 8 + 3, thing.col * 8 + 3]
        torch.testing.assert_close(centre, torch.tensor(scenes.COLOURS[thing.colour]))
    empty = image[:, 8:16, 8:16]  # the middle slot holds nothing
    assert torch.allclose(empty, torch.full_like(empty, 0.1))


def test_encoder_gives_one_vector_per_cell(data):
    cfg = CaptionerConfig(len(data.vocab), d_model=40)
    cells = ConvEncoder(cfg)(data.batch("test", [0, 1, 2]).src)
    assert cells.shape == (3, 9, 40)  # [batch, cells, d_model]: a 3 x 3 grid of 8-pixel patches


@pytest.mark.parametrize("score", ["dot", "multiplicative", "additive"])
def test_attention_weights_per_word_sum_to_one_and_match_teacher_forcing(data, score):
    net = _model(data, score=score)
    batch = data.batch("test", torch.arange(6))
    ids, weights = net.greedy_caption(batch.src)
    assert weights.shape == (*ids.shape, 9)
    sums = weights.sum(-1)
    written = torch.ones_like(ids, dtype=torch.bool)
    written[:, 1:] = (ids[:, :-1] != data.vocab.eos_id).cumprod(1).bool()  # up to <eos>
    torch.testing.assert_close(sums[written], torch.ones(int(written.sum())))
    assert (sums[~written] == 0).all()
    # the batched teacher-forced scores equal the step-by-step ones
    with torch.no_grad():
        cells = net.encode(batch.src)
        logits = net.decode(cells, batch.tgt_in)
        state, prev = net.start(cells), batch.tgt_in[:, 0]
        for t in range(batch.tgt_in.shape[1]):
            step_logits, state, _ = net.decode_step(batch.tgt_in[:, t], state, cells)
            torch.testing.assert_close(step_logits, logits[:, t], rtol=1e-4, atol=1e-5)
    assert prev.shape == (6,)


def _swapped(scene):
    a, b = scene.first, scene.second
    return Scene(Thing(b.colour, b.shape, a.row, a.col), Thing(a.colour, a.shape, b.row, b.col))


def test_without_attention_swapping_the_objects_changes_nothing(data):
    scene = Scene(Thing("red", "circle", 0, 0), Thing("blue", "square", 2, 2))
    pictures = torch.stack(
        [scenes.render(s, jitter=0, noise=0.0) for s in (scene, _swapped(scene))]
    )
    tgt_in = data.batch("test", [0, 0]).tgt_in
    bottleneck, attentive = _model(data, attention=False), _model(data, attention=True)
    with torch.no_grad():
        out = bottleneck(pictures, tgt_in)
        torch.testing.assert_close(
            out[0], out[1], rtol=1e-4, atol=1e-5
        )  # it cannot tell them apart
        cells = bottleneck.encode(pictures[:1])
        shuffled = cells[:, torch.randperm(9, generator=torch.Generator().manual_seed(0))]
        torch.testing.assert_close(
            bottleneck.decode(cells, tgt_in[:1]),
            bottleneck.decode(shuffled, tgt_in[:1]),
            rtol=1e-4,
            atol=1e-5,
        )
        out = attentive(pictures, tgt_in)
    assert (out[0] - out[1]).abs().max() > 1e-3  # with attention the position is read


def test_a_short_training_reduces_the_loss(data):
    net = _model(data, score="additive").train()
    result = train(
        net,
        data.batches("train", 32, seed=0),
        seq2seq_loss,
        run=Run(steps=40, seed=0, threads=1),
        lr=5e-3,
    )
    assert sum(result.losses[-5:]) / 5 < 0.7 * sum(result.losses[:5]) / 5


def test_caption_accuracy_counts_words_and_whole_captions():
    reference = torch.tensor([[4, 5, 2, 0], [4, 6, 7, 2]])
    predicted = torch.tensor([[4, 5, 2], [4, 6, 5]])  # shorter than the reference
    exact, word = caption_accuracy(predicted, reference)
    assert exact == 0.5 and word == pytest.approx(5 / 7)
    assert caption_accuracy(reference, reference) == (1.0, 1.0)


def test_bad_inputs_say_what_was_expected(data):
    net = _model(data)
    with pytest.raises(
        ValueError, match=r"images must be \[batch, 3, 24, 24\], got \(2, 3, 16, 16\)"
    ):
        net.encode(torch.zeros(2, 3, 16, 16))
    with pytest.raises(TypeError, match="floating-point"):
        net.encode(torch.zeros(2, 3, 24, 24, dtype=torch.long))
    with pytest.raises(ValueError, match="vocabulary has"):
        net(torch.zeros(1, 3, 24, 24), torch.tensor([[1, 99]]))
    with pytest.raises(ValueError, match="cells must be"):
        net.decode(torch.zeros(1, 4, 64), torch.tensor([[1]]))
    with pytest.raises(ValueError, match="multiple of patch"):
        CaptionerConfig(10, canvas=20)
    with pytest.raises(ValueError, match="score must be"):
        CaptionerConfig(10, score="cosine")
    with pytest.raises(ValueError, match="share|columns"):
        Scene(Thing("red", "circle", 0, 1), Thing("blue", "circle", 1, 1))
    with pytest.raises(ValueError, match="both a red circle"):
        Scene(Thing("red", "circle", 0, 0), Thing("red", "circle", 1, 1))
    with pytest.raises(ValueError, match="colour must be one of"):
        Thing("purple", "circle", 0, 0)
    with pytest.raises(ValueError, match="expected a caption"):
        scenes.parse_caption(["a", "red", "circle"])
    with pytest.raises(ValueError, match="predicted has 1 captions, reference 2"):
        caption_accuracy(torch.tensor([[1]]), torch.tensor([[1], [2]]))


def test_decode_step_and_caption_accuracy_check_their_inputs():
    model = Captioner(CaptionerConfig(d_vocab=12, d_model=8, d_embed=4, channels=4)).eval()
    cells = model.encode(torch.rand(2, 3, 24, 24))
    state = model.start(cells)
    logits, _, _ = model.decode_step(torch.tensor([1, 1]), state, cells)
    assert logits.shape == (2, 12)
    with pytest.raises(ValueError, match="vocabulary has 12"):
        model.decode_step(torch.tensor([1, 12]), state, cells)
    with pytest.raises(ValueError, match="state"):
        model.decode_step(torch.tensor([1, 1]), state[:, :1], cells)
    with pytest.raises(ValueError, match="only padding"):
        caption_accuracy(torch.tensor([[3, 2]]), torch.tensor([[0, 0]]))
    np = pytest.importorskip("numpy")
    assert caption_accuracy(torch.tensor([[3, 2]]), torch.tensor([[3, 2]]), np.int64(0)) == (1, 1)


def test_scene_batches_refuse_a_batch_larger_than_the_split():
    data = scenes.SceneData({"train": scenes.all_scenes()[:5]}, 0)
    with pytest.raises(ValueError, match="batch_size=6 is more than the 5 train scenes"):
        data.batches("train", 6)
    np = pytest.importorskip("numpy")
    assert next(data.batches("train", np.int64(5))).src.shape[0] == 5
    assert Thing("red", "circle", np.int64(1), 0).row == 1
    with pytest.raises(TypeError, match="index must be an int"):
        data.batch("train", 1.7)
