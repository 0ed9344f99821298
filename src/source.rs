//! Reading Python sources: decoding, BOM handling and line/column lookup.
//!
//! Every edit is a byte range on the text *without* its BOM; the BOM is put
//! back when the file is written, so it survives byte-identical. A file whose lines end in a
//! lone CR (classic Mac) is read with LF line ends, which every pass counts lines by, and
//! written back with CR.

use std::path::{Path, PathBuf};

use ruff_text_size::TextSize;

const BOM: &str = "\u{feff}";

/// The largest file xla2tpu reads (a source, a notebook, a configuration, standard input):
/// beyond it a file is refused unread, so `/dev/zero` or a runaway generated file cannot fill
/// memory.
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// The largest Python source parsed: the syntax tree and the passes over it take about 60 times
/// the text's size in memory (16 MiB: about 1 GB).
pub const MAX_PYTHON_BYTES: usize = 16 << 20;

/// The bytes of a regular file of at most [`MAX_FILE_BYTES`]. A FIFO or a device would block
/// or never end, so is refused before it is opened for reading.
pub fn read_file(path: &Path) -> std::io::Result<Vec<u8>> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    read_limited(std::fs::File::open(path)?)
}

/// At most [`MAX_FILE_BYTES`] from `reader`, or an error saying it is larger.
pub fn read_limited(reader: impl std::io::Read) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    reader.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(std::io::Error::other(format!(
            "larger than {} MiB, the most xla2tpu reads of one file",
            MAX_FILE_BYTES >> 20
        )));
    }
    Ok(bytes)
}

/// [`read_file`] as UTF-8 text.
pub fn read_text(path: &Path) -> std::io::Result<String> {
    String::from_utf8(read_file(path)?).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// A decoded Python source file.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// Path as shown to the user (`-` for stdin).
    pub path: PathBuf,
    /// The text without a leading BOM.
    pub text: String,
    /// Whether the original bytes started with a UTF-8 BOM.
    pub bom: bool,
    /// Whether every line ended in a lone `\r` (none in `\n`): `text` has `\n` in their place.
    pub cr_only: bool,
}

/// Why a file could not be read as Python source.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
    #[error("binary file (contains NUL bytes); skipped")]
    Binary,
    #[error("not valid UTF-8 (byte {offset}); PEP 263 encodings are not supported, re-encode the file as UTF-8")]
    NotUtf8 { offset: usize },
}

impl SourceFile {
    pub fn read(path: &Path) -> Result<SourceFile, InputError> {
        Self::from_bytes(path.to_path_buf(), read_file(path)?)
    }

    pub fn from_bytes(path: PathBuf, bytes: Vec<u8>) -> Result<SourceFile, InputError> {
        if bytes.contains(&0) {
            return Err(InputError::Binary);
        }
        let text =
            String::from_utf8(bytes).map_err(|e| InputError::NotUtf8 { offset: e.utf8_error().valid_up_to() })?;
        let (text, bom) = match text.strip_prefix(BOM) {
            Some(rest) => (rest.to_string(), true),
            None => (text, false),
        };
        // Python ends a line at a lone CR too; the passes find lines by LF, and once put an
        // inserted import on the "line" after the whole file.
        let cr_only = text.contains('\r') && !text.contains('\n');
        let text = if cr_only { text.replace('\r', "\n") } else { text };
        Ok(SourceFile { path, text, bom, cr_only })
    }

    /// The bytes to write back for `text` (re-adding the BOM if there was one).
    pub fn encode(&self, text: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(text.len() + 3);
        if self.bom {
            out.extend_from_slice(BOM.as_bytes());
        }
        if self.cr_only {
            out.extend(text.bytes().map(|b| if b == b'\n' { b'\r' } else { b }));
        } else {
            out.extend_from_slice(text.as_bytes());
        }
        out
    }
}

/// One-based line and column (in characters) of byte offsets.
pub struct LineIndex {
    starts: Vec<usize>,
    /// Lines holding a non-ASCII character, whose columns must be counted; on the others a
    /// column is a subtraction, however long the line and however many findings it has.
    non_ascii: Vec<bool>,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
        let non_ascii = if text.is_ascii() {
            vec![false; starts.len()]
        } else {
            let ends = starts.iter().skip(1).copied().chain([text.len()]);
            starts.iter().zip(ends).map(|(&s, e)| !text[s..e].is_ascii()).collect()
        };
        LineIndex { starts, non_ascii }
    }

    /// (line, column), both 1-based; column counts characters.
    pub fn line_col(&self, text: &str, offset: TextSize) -> (usize, usize) {
        let offset = usize::from(offset).min(text.len());
        let line = self.starts.partition_point(|&s| s <= offset) - 1;
        let col = if self.non_ascii[line] {
            text[self.starts[line]..offset].chars().count()
        } else {
            offset - self.starts[line]
        };
        (line + 1, col + 1)
    }
}

/// Start of the line containing `offset`. Bytes, not `str` slices: `offset - 1` may fall inside
/// a character (found by the fuzzer), and a line break is always a boundary.
/// Whether the `len` bytes at `at` stand alone: no byte that can continue a Python identifier
/// (an ASCII letter, digit or `_`, or any byte of a non-ASCII character) touches them.
pub fn is_whole_word(bytes: &[u8], at: usize, len: usize) -> bool {
    let continues = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_' || !b.is_ascii();
    !(at.checked_sub(1).and_then(|i| bytes.get(i)).is_some_and(continues) || bytes.get(at + len).is_some_and(continues))
}

/// Whether `word` occurs in `text` as a whole word ([`is_whole_word`]).
pub fn has_word(text: &str, word: &str) -> bool {
    let bytes = text.as_bytes();
    memchr::memmem::find_iter(bytes, word.as_bytes()).any(|at| is_whole_word(bytes, at, word.len()))
}

pub fn line_start(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1)
}

/// End of the line containing `offset`, *after* its line terminator.
pub fn line_end_inclusive(text: &str, offset: usize) -> usize {
    let offset = offset.min(text.len());
    text.as_bytes()[offset..].iter().position(|&b| b == b'\n').map_or(text.len(), |i| offset + i + 1)
}

/// The indentation (leading spaces/tabs) of the line containing `offset`.
pub fn indentation_at(text: &str, offset: usize) -> &str {
    let start = line_start(text, offset);
    let line = &text[start..];
    let len = line.len() - line.trim_start_matches([' ', '\t']).len();
    &line[..len]
}

/// The newline style of a file: `\r\n` if its first line ends that way.
pub fn newline_of(text: &str) -> &'static str {
    match text.find('\n') {
        Some(i) if i > 0 && text.as_bytes()[i - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_words_only() {
        assert!(has_word("a = xm.f()", "xm"));
        assert!(has_word("xm", "xm"));
        assert!(!has_word("xmm = 1; _xm = 2; x_xm; xmé", "xm"));
        assert!(has_word("(xm)", "xm"));
    }
}
