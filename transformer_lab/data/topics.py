"""A controlled labelled task that isolates what pretraining transfers: the topic of a word
the labelled examples never contain.

Every sentence is a class-neutral template with one content word in it ("Everyone was
talking about the giraffe."); its label is the topic of that word: 0 animal, 1 food,
2 clothing, 3 vehicle, 4 occupation. The word lists (:data:`WORDS`) and the templates
(:data:`TEMPLATES`) are written out here, so the task builds offline and is the same
everywhere.

The words of each topic are split at random (with the task's ``seed``) into *training
words* and *test words*, and the templates into training and test templates:

- the labelled pool: training words in training templates;
- ``test_unseen``: test words in test templates: no content word of a test sentence occurs
  in any labelled sentence, so the only way to classify it is to know, from somewhere other
  than the labels, that a kayak is a vehicle;
- ``test_seen``: training words in test templates: what the labels can teach directly.

Each template occurs with every topic equally often, so the template says nothing about the
label: a bag of words or a network trained from nothing on the labelled pool can learn only
the training words, and scores about one in five on ``test_unseen``::

    task = topic_task(seed=0)
    texts, labels = sample_labelled(task.train, 40, seed=0)   # 8 labelled per topic
    task.test_unseen[0]       # Sentence(text=..., label=..., word=...)
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass

from transformer_lab.checks import integer
from transformer_lab.data.labelled import balanced_draw

__all__ = [
    "TOPICS",
    "WORDS",
    "TEMPLATES",
    "Sentence",
    "TopicTask",
    "fill",
    "topic_task",
    "sample_labelled",
]

TOPICS = ("animal", "food", "clothing", "vehicle", "occupation")  # label 0 ... 4
# 50 words per topic, none of them common in a second topic's sense
_WORD_TEXT = {
    "animal": """dog cat horse cow pig sheep goat lion tiger bear wolf fox rabbit mouse deer
        elephant giraffe zebra monkey gorilla kangaroo koala panda camel donkey squirrel
        hedgehog otter beaver badger moose buffalo leopard cheetah hippo rhino crocodile
        snake lizard frog owl eagle parrot pigeon goose swan penguin ostrich dolphin
        whale""",
    "food": """bread cheese butter rice pasta soup salad sandwich pizza burger pancake waffle
        omelette sausage bacon steak yogurt cereal porridge cookie biscuit cake pie muffin
        doughnut chocolate banana grape lemon mango peach pear cherry strawberry pineapple
        carrot potato tomato onion garlic cucumber lettuce broccoli cabbage spinach
        mushroom peanut honey curry lasagna""",
    "clothing": """shirt blouse sweater jacket coat dress skirt trousers jeans sock shoe boot
        sandal slipper sneaker hat cap scarf glove mitten necktie belt vest hoodie
        cardigan blazer tuxedo gown pyjamas robe apron raincoat overcoat bikini swimsuit
        leggings tights stocking beanie bonnet poncho kimono sari overalls tunic corset
        turtleneck bathrobe waistcoat petticoat""",
    "vehicle": """car bus truck van taxi bicycle motorcycle scooter train tram airplane
        helicopter jet boat ship yacht canoe kayak ferry submarine tractor ambulance
        limousine jeep minivan trailer caravan sled sleigh skateboard rocket glider
        bulldozer forklift lorry motorboat sailboat speedboat hovercraft airship moped
        wagon locomotive unicycle tricycle snowmobile spaceship steamboat freighter
        firetruck""",
    "occupation": """doctor nurse teacher lawyer engineer farmer baker butcher chef waiter
        pilot sailor soldier firefighter policeman plumber electrician carpenter mechanic
        dentist surgeon pharmacist accountant banker cashier clerk journalist photographer
        painter sculptor musician singer actor dancer librarian professor scientist chemist
        architect programmer janitor gardener tailor barber hairdresser judge priest
        postman receptionist astronaut""",
}
WORDS = {topic: tuple(words.split()) for topic, words in _WORD_TEXT.items()}
# "{a}" is "a" or "an" as the word needs; no template suits one topic more than another
TEMPLATES = (
    "I never expected to see {a} {w} there.",
    "Everyone was talking about the {w}.",
    "There is {a} {w} in the old photograph.",
    "She told me a long story about {a} {w}.",
    "The {w} was the first thing I noticed.",
    "He drew {a} {w} on the back of the envelope.",
    "My neighbour keeps mentioning the {w}.",
    "We read an article about the {w} this morning.",
    "Have you ever dreamed about {a} {w}?",
    "The children asked what {a} {w} is.",
    "Nobody could explain why the {w} was there.",
    "That {w} reminded me of my childhood.",
    "The book has a whole chapter on the {w}.",
    "I heard something about {a} {w} on the radio.",
    "The word {w} came up three times in the meeting.",
    "Last week my cousin sent me a picture of {a} {w}.",
    "The next slide showed {a} {w}.",
    "Somebody wrote about the {w} in the newspaper.",
    "They argued for an hour about the {w}.",
    "In the middle of the film there was {a} {w}.",
    "The teacher's question was about {a} {w}.",
    "I forgot to mention the {w}.",
    "What do you think of the {w}?",
    "Her last painting shows {a} {w}.",
)
TRAIN_WORDS = 25  # of the 50 words of each topic; the other 25 are test words
TRAIN_TEMPLATES = 16  # of the 24 templates; the other 8 are test templates


@dataclass(frozen=True)
class Sentence:
    """One labelled sentence."""

    text: str
    label: int  # index into TOPICS
    word: str  # the content word that decides the label


@dataclass(frozen=True)
class TopicTask:
    """The labelled pool and two test sets (see the module's docstring)."""

    train: tuple[Sentence, ...]  # every training word in every training template
    test_seen: tuple[Sentence, ...]  # training words in test templates
    test_unseen: tuple[Sentence, ...]  # test words in test templates
    train_words: tuple[tuple[str, ...], ...]  # per topic
    test_words: tuple[tuple[str, ...], ...]  # per topic


def fill(template: str, word: str) -> str:
    """``template`` with ``word`` in place of ``{w}`` and "a"/"an" in place of ``{a}``."""
    if not isinstance(template, str) or "{w}" not in template:
        raise ValueError(f"template must be a str holding '{{w}}', got {template!r}")
    if not isinstance(word, str) or not word.isalpha():
        raise ValueError(f"word must be one word of letters, got {word!r}")
    article = "an" if word[0].lower() in "aeiou" else "a"
    return template.replace("{a}", article).replace("{w}", word)


def topic_task(seed: int = 0) -> TopicTask:
    """The topic task, its words and templates split with ``seed``."""
    return _topic_task(integer(seed, "seed"))


@functools.lru_cache(maxsize=8)
def _topic_task(seed: int) -> TopicTask:
    rng = random.Random(seed)
    templates = list(TEMPLATES)
    rng.shuffle(templates)
    train_t, test_t = templates[:TRAIN_TEMPLATES], templates[TRAIN_TEMPLATES:]
    train_w, test_w = [], []
    for topic in TOPICS:
        words = list(WORDS[topic])
        rng.shuffle(words)
        train_w.append(tuple(words[:TRAIN_WORDS]))
        test_w.append(tuple(words[TRAIN_WORDS:]))

    def sentences(words, temps):
        return tuple(
            Sentence(fill(t, w), label, w)
            for label, ws in enumerate(words)
            for w in ws
            for t in temps
        )

    return TopicTask(
        sentences(train_w, train_t), sentences(train_w, test_t), sentences(test_w, test_t),
        tuple(train_w), tuple(test_w),
    )  # fmt: skip


def sample_labelled(
    pool: tuple[Sentence, ...] | list[Sentence], n: int, seed: int
) -> tuple[list[str], list[int]]:
    """``n`` labelled sentences from ``pool``, ``n / 5`` of each topic, drawn with ``seed``
    and shuffled: ``(texts, labels)``. Different ``n`` with one seed give nested draws."""
    return balanced_draw(
        pool, n, seed, item=Sentence, classes=TOPICS, source="topic_task().train", kind="sentences"
    )
