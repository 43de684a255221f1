// The tokenizers of the site's live models, in the browser: the same ids as the package's.
//
// window.TransformerLabTokenizers = {CharTokenizer, WordPieceTokenizer}
//
// - new CharTokenizer(gptJson): one token per character, ids in the order of
//   gptJson.vocab (chapter 13's tokenizer); .encode(text) -> number[] refuses a character
//   outside the vocabulary, as the package does; .decode(ids) -> string.
// - new WordPieceTokenizer(minilmJson): BERT's tokenizer as the package runs it (the
//   `tokenizers` library with all-MiniLM-L6-v2's tokenizer.json): special tokens written in
//   the text are matched first; the rest is normalized (control characters dropped,
//   whitespace made a space, CJK ideographs spaced apart, NFD with the non-spacing marks
//   dropped, lower case), split on whitespace and punctuation, and each word cut into the
//   longest pieces of the vocabulary from the left ("##" marks a piece inside a word; a word
//   with no spelling, or longer than max_input_chars_per_word characters, is [UNK]).
//   .encode(text) -> {ids, tokens} with [CLS] and [SEP], truncated to max_positions.
//   The character classes come from minilm.json (measured from the `tokenizers` library by
//   transformer_lab.export.live), because its Unicode tables are older than the browser's.
(function () {
  "use strict";

  function CharTokenizer(meta) {
    if (!meta || !Array.isArray(meta.vocab)) throw new TypeError("CharTokenizer needs gpt.json");
    this.itos = meta.vocab.slice();
    this.stoi = new Map();
    for (var i = 0; i < this.itos.length; i++) this.stoi.set(this.itos[i], i);
    this.vocabSize = this.itos.length;
  }

  CharTokenizer.prototype.encode = function (text) {
    var ids = [];
    for (var ch of String(text)) {  // by code point, as Python iterates a str
      var id = this.stoi.get(ch);
      if (id === undefined) throw new Error("character " + JSON.stringify(ch) + " is not in the vocabulary");
      ids.push(id);
    }
    return ids;
  };

  CharTokenizer.prototype.decode = function (ids) {
    var out = "";
    for (var i = 0; i < ids.length; i++) {
      var id = Number(ids[i]);
      if (!Number.isInteger(id) || id < 0 || id >= this.vocabSize) {
        throw new RangeError("ids must be in [0, " + this.vocabSize + "), got " + ids[i]);
      }
      out += this.itos[id];
    }
    return out;
  };

  // A set of code points given as sorted inclusive [first, last] ranges: binary search.
  function RangeSet(ranges) {
    this.first = new Uint32Array(ranges.length);
    this.last = new Uint32Array(ranges.length);
    for (var i = 0; i < ranges.length; i++) {
      this.first[i] = ranges[i][0];
      this.last[i] = ranges[i][1];
    }
  }

  RangeSet.prototype.has = function (code) {
    var lo = 0, hi = this.first.length - 1;
    while (lo <= hi) {
      var mid = (lo + hi) >> 1;
      if (code < this.first[mid]) hi = mid - 1;
      else if (code > this.last[mid]) lo = mid + 1;
      else return true;
    }
    return false;
  };

  function escapeRegExp(s) {
    return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  }

  function WordPieceTokenizer(meta) {
    if (!meta || !Array.isArray(meta.vocab) || !meta.char_classes) {
      throw new TypeError("WordPieceTokenizer needs minilm.json");
    }
    this.vocab = new Map();
    for (var i = 0; i < meta.vocab.length; i++) this.vocab.set(meta.vocab[i], i);
    this.itos = meta.vocab;
    this.lowercase = meta.lowercase !== false;
    this.stripAccents = meta.strip_accents === undefined ? this.lowercase : !!meta.strip_accents;
    this.unk = meta.unk;
    this.cls = meta.cls;
    this.sep = meta.sep;
    this.prefix = meta.continuing_subword_prefix || "##";
    this.maxWordChars = meta.max_input_chars_per_word || 100;
    this.maxLength = meta.max_positions;
    var c = meta.char_classes;
    this.removed = new RangeSet(c.removed);
    this.space = new RangeSet(c.space);
    this.chinese = new RangeSet(c.chinese);
    this.decomposed = new RangeSet(c.decomposed);
    this.split = new RangeSet(c.split);
    this.punct = new RangeSet(c.punct);
    var specials = (meta.special_tokens || []).slice().sort(function (a, b) { return b.length - a.length; });
    // leftmost match, the longest first: how the library finds added tokens in the raw text
    this.specialPattern = specials.length ? new RegExp("(" + specials.map(escapeRegExp).join("|") + ")") : null;
    this.specials = new Set(specials);
  }

  // BERT's normalizer: clean, space CJK ideographs apart, NFD without non-spacing marks,
  // lower case (one character at a time, as the library does: no final-sigma rule).
  WordPieceTokenizer.prototype.normalize = function (text) {
    var out = "";
    for (var ch of text) {
      var code = ch.codePointAt(0);
      if (this.removed.has(code)) continue;
      if (this.space.has(code)) out += " ";
      else if (this.chinese.has(code)) out += " " + ch + " ";
      else out += ch;
    }
    if (this.stripAccents) {
      var stripped = "";
      for (var d of this.nfd(out)) if (!this.removed.has(d.codePointAt(0))) stripped += d;
      out = stripped;
    }
    if (this.lowercase) {
      var lower = "";
      for (var l of out) lower += l.toLowerCase();
      out = lower;
    }
    return out;
  };

  // NFD of the library's Unicode version: a character the browser's newer tables decompose
  // but the library's do not is kept whole.
  WordPieceTokenizer.prototype.nfd = function (text) {
    var out = "", run = "";
    for (var ch of text) {
      if (this.decomposed.has(ch.codePointAt(0)) || ch.normalize("NFD") === ch) {
        run += ch;
      } else {
        out += run.normalize("NFD") + ch;
        run = "";
      }
    }
    return out + run.normalize("NFD");
  };

  // BERT's pre-tokenizer: words split on whitespace, each punctuation character a word.
  WordPieceTokenizer.prototype.words = function (text) {
    var words = [], word = "";
    for (var ch of text) {
      var code = ch.codePointAt(0);
      if (this.split.has(code) || this.punct.has(code)) {
        if (word) words.push(word);
        word = "";
        if (!this.split.has(code)) words.push(ch);
      } else {
        word += ch;
      }
    }
    if (word) words.push(word);
    return words;
  };

  // Greedy longest match from the left; the whole word is [UNK] when a part has no piece.
  WordPieceTokenizer.prototype.pieces = function (word) {
    var chars = Array.from(word);
    if (chars.length > this.maxWordChars) return [this.unk];
    var pieces = [], start = 0;
    while (start < chars.length) {
      var end = chars.length, piece = null;
      while (start < end) {
        var sub = chars.slice(start, end).join("");
        if (start > 0) sub = this.prefix + sub;
        if (this.vocab.has(sub)) { piece = sub; break; }
        end -= 1;
      }
      if (piece === null) return [this.unk];
      pieces.push(piece);
      start = end;
    }
    return pieces;
  };

  WordPieceTokenizer.prototype.tokenize = function (text) {
    var parts = this.specialPattern ? String(text).split(this.specialPattern) : [String(text)];
    var tokens = [];
    for (var i = 0; i < parts.length; i++) {
      if (i % 2 === 1 && this.specials.has(parts[i])) { tokens.push(parts[i]); continue; }
      var words = this.words(this.normalize(parts[i]));
      for (var w = 0; w < words.length; w++) tokens.push.apply(tokens, this.pieces(words[w]));
    }
    return tokens;
  };

  WordPieceTokenizer.prototype.encode = function (text) {
    var tokens = this.tokenize(text);
    if (this.maxLength) tokens = tokens.slice(0, Math.max(this.maxLength - 2, 0));
    tokens = [this.cls].concat(tokens, [this.sep]);
    var vocab = this.vocab;
    return {tokens: tokens, ids: tokens.map(function (t) { return vocab.get(t); })};
  };

  window.TransformerLabTokenizers = {CharTokenizer: CharTokenizer, WordPieceTokenizer: WordPieceTokenizer};
})();
