"""Stimuli of the magnitude-estimation tasks (BayesBench; Ma, Wang & Fountas 2025, Fig. 2).

Every stimulus is a deterministic function of its value ``x`` and an integer *render seed*, so the
same trial shows the same line, path or dialogue in the text, image and text+image modalities
and in every ablation condition (only the blur differs), and a synthetic and an LLM subject with
the same seed see identical pictures.

Choices where the paper is silent (named constants, listed in the design docstring):

* ASCII resolution :data:`ASCII_CELLS` (marker line and the longer of two lines);
* images :data:`IMAGE_SIZE` px square, white background, 3-px black lines, red marker;
  blur = Pillow's Gaussian blur with radius = σ in pixels;
* maze paths: :data:`MAZE_SEGMENTS` segments, lateral wiggle ±:data:`MAZE_WIGGLE` units around the
  start–end axis with monotone progress along it (so the path never crosses itself); the end
  lies exactly at distance ``x``; the text gives the moves to 0.01 unit;
* dialogue extracts: the speaking-rate model of :func:`dialogue_extract`;
* AMI Meeting Corpus word files (NXT ``*.words.xml``) can replace generated extracts
  (:func:`read_ami_words`, :func:`ami_extract`).
"""

from __future__ import annotations

import io
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

from cogtestbed.errors import InputError

#: Characters of the ASCII marker line and of the longer ASCII line (text resolution 1/50).
ASCII_CELLS = 50
#: Side of the square stimulus images in pixels (a common vision-encoder input size).
IMAGE_SIZE = 224
#: Pixel length of the marker line and of the longer of two lines in an image.
IMAGE_LINE_PX = 180
#: Line width in pixels and marker radius.
LINE_WIDTH_PX = 3
MARKER_RADIUS_PX = 6
#: Pixels per maze unit in the image (the longest session range fits the canvas).
MAZE_PX_PER_UNIT = 15.0
#: Segments of a maze path and the half-width (units) of its lateral wiggle.
MAZE_SEGMENTS = 8
MAZE_WIGGLE = 1.5
#: PNG compression level (fast; images stay lossless) and zlib strategy: Z_RLE (3) matches runs
#: only, which suits flat regions and blurred edges: faster than the default strategy and smaller.
PNG_COMPRESS_LEVEL = 1
PNG_COMPRESS_TYPE = 3

#: Speaking-rate model of generated dialogue: mean words per second of conversational speech
#: (about 150 words per minute; Yuan, Liberman & Cieri 2006), the log-normal SD of a speaker's
#: rate around it, the pause between turns (s), and words per turn (inclusive range).
SPEAKING_RATE_WPS = 2.5
SPEAKER_RATE_LOG_SD = 0.2
TURN_GAP_S = 0.4
WORDS_PER_TURN = (3, 12)
SPEAKERS = ("A", "B", "C", "D")
_MEETING_TEXT = (
    "okay so um we should probably look at the budget first and then the design yeah right i think "
    "that the remote control needs a bigger button maybe we could go with rubber or plastic the "
    "marketing report says people want something fancy and easy to use so uh let us decide on the "
    "colour and the shape today well i am not sure about the cost of the battery but the kinetic one "
    "is nice mm hmm exactly and what about the speech recognition that would be cool though "
    "expensive we have twelve euros fifty per unit alright let me show the next slide"
)
_MEETING_WORDS = tuple(_MEETING_TEXT.split(" "))


# ----------------------------------------------------------------------------- helpers
def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(int(seed) & 0x7FFF_FFFF_FFFF_FFFF)


#: Palette of the unblurred images (index: white, black, red, green): palette PNGs encode fast.
_PALETTE = [255, 255, 255, 0, 0, 0, 255, 0, 0, 0, 160, 0]
WHITE, BLACK, RED, GREEN = 0, 1, 2, 3


def _png(img: Image.Image, blur: float, grey: bool = False) -> bytes:
    """PNG bytes; with ``blur`` > 0 a Gaussian blur of σ = ``blur`` px (Pillow's GaussianBlur).

    The blur is applied to the content's bounding box widened by 4σ + 4 px (the rest of the canvas
    is uniform white, which a blur leaves unchanged), so blurring costs little for thin stimuli.
    ``grey``: the picture is black on white, so the blurred image is stored as greyscale.
    """
    if blur > 0:
        rgb = img.convert("L" if grey else "RGB")
        box = img.getbbox()  # palette index 0 is white: the box of the drawn content
        if box is not None:
            m = int(math.ceil(4 * blur)) + 4
            box = (max(box[0] - m, 0), max(box[1] - m, 0), min(box[2] + m, IMAGE_SIZE), min(box[3] + m, IMAGE_SIZE))
            rgb.paste(rgb.crop(box).filter(ImageFilter.GaussianBlur(radius=float(blur))), box[:2])
        img = rgb
    buf = io.BytesIO()
    img.save(buf, format="PNG", compress_level=PNG_COMPRESS_LEVEL, compress_type=PNG_COMPRESS_TYPE)
    return buf.getvalue()


def _canvas() -> tuple[Image.Image, ImageDraw.ImageDraw]:
    img = Image.new("P", (IMAGE_SIZE, IMAGE_SIZE), WHITE)
    img.putpalette(_PALETTE)
    return img, ImageDraw.Draw(img)


# ----------------------------------------------------------------------------- marker location
def marker_text(x: float) -> str:
    """ASCII line with a '0' at the marker (cell ``round(x·(ASCII_CELLS−1))``)."""
    cells = ["-"] * ASCII_CELLS
    cells[int(round(float(np.clip(x, 0.0, 1.0)) * (ASCII_CELLS - 1)))] = "0"
    return "|" + "".join(cells) + "|"


def marker_image(x: float, seed: int, blur: float = 0.0) -> bytes:
    """A horizontal line with a red marker at relative position ``x`` (vertical jitter by seed)."""
    img, draw = _canvas()
    y = IMAGE_SIZE // 2 + int(_rng(seed).integers(-40, 41))
    left = (IMAGE_SIZE - IMAGE_LINE_PX) // 2
    draw.line([(left, y), (left + IMAGE_LINE_PX, y)], fill=BLACK, width=LINE_WIDTH_PX)
    cx = left + float(np.clip(x, 0.0, 1.0)) * IMAGE_LINE_PX
    r = MARKER_RADIUS_PX
    draw.ellipse([(cx - r, y - r), (cx + r, y + r)], fill=RED)
    return _png(img, blur)


# ----------------------------------------------------------------------------- line ratio
def _ratio_layout(x: float, seed: int, longest: int) -> tuple[int, int, bool]:
    short = max(1, int(round(float(np.clip(x, 0.0, 1.0)) * longest)))
    return longest, short, bool(_rng(seed).integers(0, 2))


def ratio_text(x: float, seed: int) -> str:
    """Two ASCII lines ``|-----|``; the longer has ASCII_CELLS dashes; order from the seed."""
    longest, short, short_first = _ratio_layout(x, seed, ASCII_CELLS)
    a, b = "|" + "-" * longest + "|", "|" + "-" * short + "|"
    return f"{b}\n{a}" if short_first else f"{a}\n{b}"


def ratio_image(x: float, seed: int, blur: float = 0.0) -> bytes:
    """Two horizontal lines (the longer IMAGE_LINE_PX px), random order and horizontal offsets."""
    longest, short, short_first = _ratio_layout(x, seed, IMAGE_LINE_PX)
    rng = _rng(seed + 1)
    img, draw = _canvas()
    for row, length in enumerate((short, longest) if short_first else (longest, short)):
        y = IMAGE_SIZE // 3 + row * IMAGE_SIZE // 3
        left = int(rng.integers(8, IMAGE_SIZE - length - 7)) if IMAGE_SIZE - length > 16 else 8
        draw.line([(left, y), (left + length, y)], fill=BLACK, width=LINE_WIDTH_PX)
    return _png(img, blur, grey=True)


# ----------------------------------------------------------------------------- maze distance
def maze_path(target: float, seed: int) -> np.ndarray:
    """Vertices (MAZE_SEGMENTS + 1, 2) of a non-self-intersecting path from (0, 0).

    In the frame of the start–end axis the vertices advance monotonically (sorted uniform
    positions along the axis) with lateral offsets U(−MAZE_WIGGLE, MAZE_WIGGLE): the path is the
    graph of a function in that frame and cannot cross itself.  The frame is rotated by a uniform
    angle.  The end point lies exactly at distance ``target``; the interior vertices are rounded
    to 0.01 unit (the text's precision, so the text's moves sum to the end within 0.01).
    """
    rng = _rng(seed)
    along = np.concatenate([[0.0], np.sort(rng.uniform(0.0, target, MAZE_SEGMENTS - 1)), [target]])
    side = np.concatenate([[0.0], rng.uniform(-MAZE_WIGGLE, MAZE_WIGGLE, MAZE_SEGMENTS - 1), [0.0]])
    theta = rng.uniform(0.0, 2.0 * math.pi)
    c, s = math.cos(theta), math.sin(theta)
    pts = np.column_stack([along * c - side * s, along * s + side * c])
    pts[1:-1] = np.round(pts[1:-1], 2)
    return pts


def maze_distance(path: np.ndarray) -> float:
    """Euclidean start–end distance of a path."""
    return float(np.hypot(*(path[-1] - path[0])))


def maze_text(path: np.ndarray) -> str:
    """The "long, detailed path description": one signed east/north move per segment."""
    lines = ["The path starts at the start point. Then it moves:"]
    for k, (dx, dy) in enumerate(np.diff(path, axis=0), start=1):
        ew = f"{abs(dx):.2f} units {'east' if dx >= 0 else 'west'}"
        ns = f"{abs(dy):.2f} units {'north' if dy >= 0 else 'south'}"
        lines.append(f"{k}. {ew} and {ns}")
    lines.append("Then the path ends at the end point.")
    return "\n".join(lines)


def maze_image(path: np.ndarray, blur: float = 0.0) -> bytes:
    """The path as a polyline, start in green, end in red, centred on the canvas."""
    img, draw = _canvas()
    centre = (path.max(axis=0) + path.min(axis=0)) / 2.0
    px = (path - centre) * MAZE_PX_PER_UNIT
    pts = [(IMAGE_SIZE / 2 + float(u), IMAGE_SIZE / 2 - float(v)) for u, v in px]
    draw.line(pts, fill=BLACK, width=LINE_WIDTH_PX, joint="curve")
    r = MARKER_RADIUS_PX
    for (u, v), colour in ((pts[0], GREEN), (pts[-1], RED)):
        draw.ellipse([(u - r, v - r), (u + r, v + r)], fill=colour)
    return _png(img, blur)


# ----------------------------------------------------------------------------- dialogue duration
@dataclass(frozen=True)
class Word:
    """One timed word of a transcript (AMI NXT words: speaker, text, start and end in seconds)."""

    speaker: str
    text: str
    start: float
    end: float


def dialogue_extract(duration: float, seed: int) -> tuple[Word, ...]:
    """A meeting-like extract lasting exactly ``duration`` seconds.

    Speaking-rate model: each of SPEAKERS speaks at SPEAKING_RATE_WPS·exp(N(0, SPEAKER_RATE_LOG_SD²))
    words per second; a word lasts (its share of characters relative to the vocabulary mean) /
    rate; turns of U{WORDS_PER_TURN} words alternate between random speakers with TURN_GAP_S
    pauses.  Words are added until the nominal time reaches ``duration``, then the timeline is
    rescaled so the extract ends exactly at ``duration`` (the rescaling changes the nominal rate by
    less than one word).
    """
    rng = _rng(seed)
    rates = SPEAKING_RATE_WPS * np.exp(rng.normal(0.0, SPEAKER_RATE_LOG_SD, len(SPEAKERS)))
    mean_len = float(np.mean([len(w) for w in _MEETING_WORDS]))
    words: list[Word] = []
    t, speaker = 0.0, -1
    while t < duration or not words:
        speaker = int(rng.choice([k for k in range(len(SPEAKERS)) if k != speaker]))
        if words:
            t += TURN_GAP_S
        for _ in range(int(rng.integers(WORDS_PER_TURN[0], WORDS_PER_TURN[1] + 1))):
            text = _MEETING_WORDS[int(rng.integers(len(_MEETING_WORDS)))]
            length = (len(text) / mean_len) / rates[speaker]
            words.append(Word(SPEAKERS[speaker], text, t, t + length))
            t += length
            if t >= duration:
                break
    scale = duration / words[-1].end
    return tuple(Word(w.speaker, w.text, w.start * scale, w.end * scale) for w in words)


def dialogue_text(words: Sequence[Word]) -> str:
    """Transcript lines ``A: words ...``, one per speaker turn (no timestamps)."""
    lines: list[str] = []
    current = None
    for w in words:
        if w.speaker != current:
            lines.append(f"{w.speaker}: {w.text}")
            current = w.speaker
        else:
            lines[-1] += f" {w.text}"
    return "\n".join(lines)


_NITE_ID = re.compile(r"^(?P<meeting>[^.]+)\.(?P<speaker>[^.]+)\.words\.xml$")


def read_ami_words(path: str | Path) -> tuple[Word, ...]:
    """Words of one AMI NXT word file (``<meeting>.<speaker>.words.xml``), in time order.

    Keeps ``<w>`` elements with ``starttime`` and ``endtime`` (punctuation and untimed tokens are
    dropped); the speaker letter comes from the file name.  Raises ValueError for a file that is
    not an AMI word file.
    """
    p = Path(path)
    m = _NITE_ID.match(p.name)
    if m is None:
        raise InputError(f"{p.name}: not an AMI word file (expected <meeting>.<speaker>.words.xml)")
    try:
        root = ET.parse(p).getroot()
    except ET.ParseError as exc:
        raise InputError(f"{p}: not valid XML ({exc})") from None
    out = []
    for el in root.iter():
        if el.tag.rsplit("}", 1)[-1] != "w" or el.get("punc") == "true":
            continue
        start, end = el.get("starttime"), el.get("endtime")
        if start is None or end is None or not (el.text or "").strip():
            continue
        out.append(Word(m["speaker"], el.text.strip(), float(start), float(end)))  # type: ignore[union-attr]
    if not out:
        raise InputError(f"{p}: no timed words")
    return tuple(sorted(out, key=lambda w: w.start))


@lru_cache(maxsize=8)
def ami_corpus(directory: str) -> tuple[Word, ...]:
    """All timed words of every ``*.words.xml`` under ``directory``, merged in time order.

    One meeting per directory is the expected layout (speakers of one meeting interleave)."""
    files = sorted(Path(directory).glob("*.words.xml"))
    if not files:
        raise InputError(f"no AMI word files (*.words.xml) in {directory}")
    words = [w for f in files for w in read_ami_words(f)]
    return tuple(sorted(words, key=lambda w: (w.start, w.speaker)))


def ami_extract(corpus: Sequence[Word], target: float, seed: int) -> tuple[Word, ...]:
    """A contiguous extract whose duration (last end − first start) is closest to ``target``,
    starting at a word chosen by ``seed``; times are shifted to start at 0."""
    n = len(corpus)
    first = int(_rng(seed).integers(0, n))
    t0 = corpus[first].start
    best, best_err = first, math.inf
    for k in range(first, n):
        err = abs(corpus[k].end - t0 - target)
        if err < best_err:
            best, best_err = k, err
        if corpus[k].end - t0 > target:
            break
    return tuple(Word(w.speaker, w.text, w.start - t0, w.end - t0) for w in corpus[first:best + 1])


def extract_duration(words: Sequence[Word]) -> float:
    return float(words[-1].end - words[0].start)
