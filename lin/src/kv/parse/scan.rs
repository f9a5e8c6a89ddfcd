//! A hand-written reader of kvhist/1 documents for the common case: one
//! pass over the bytes, strings borrowed from the text, every operation
//! converted as it is read. It gives up (`None`) on anything it does not
//! handle exactly as serde would (escapes in strings, fractions or
//! exponents in numbers, duplicate fields, any error): the serde readers
//! then decide, so the result never depends on which reader ran.

use super::{op_from, AnyId, FIn, Gathered, InitIn, OpIn, OutIn, Str};
use std::borrow::Cow;

/// Nesting this reader follows in free-form fields, well inside serde_json's
/// limit (128 in all): deeper documents are left to serde.
const MAX_DEPTH: usize = 64;

/// A cursor over the document's bytes.
struct Scan<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn ws(&mut self) {
        let b = self.text.as_bytes();
        while self.at < b.len() && matches!(b[self.at], b' ' | b'\n' | b'\r' | b'\t') {
            self.at += 1;
        }
    }

    /// Skips whitespace, then consumes `c` if it is next.
    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.peek() == Some(c) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn literal(&mut self, word: &str) -> Option<()> {
        self.ws();
        if self.text.as_bytes()[self.at..].starts_with(word.as_bytes()) {
            self.at += word.len();
            Some(())
        } else {
            None
        }
    }

    /// `null` if it is next (consumed).
    fn null(&mut self) -> bool {
        self.ws();
        self.literal_if("null")
    }

    fn literal_if(&mut self, word: &str) -> bool {
        if self.text.as_bytes()[self.at..].starts_with(word.as_bytes()) {
            self.at += word.len();
            true
        } else {
            false
        }
    }

    /// A string without escapes or control characters, borrowed.
    fn str(&mut self) -> Option<&'a str> {
        self.ws();
        if self.peek() != Some(b'"') {
            return None;
        }
        let start = self.at + 1;
        let b = self.text.as_bytes();
        let mut i = start;
        while i < b.len() {
            match b[i] {
                b'"' => {
                    self.at = i + 1;
                    return self.text.get(start..i);
                }
                b'\\' | 0..=0x1f => return None,
                _ => i += 1,
            }
        }
        None
    }

    /// An integer as JSON writes it (no fraction or exponent), with its sign.
    fn int(&mut self) -> Option<(bool, u64)> {
        self.ws();
        let b = self.text.as_bytes();
        let neg = self.peek() == Some(b'-');
        let mut i = self.at + usize::from(neg);
        let digits = i;
        let mut v: u64 = 0;
        while i < b.len() && b[i].is_ascii_digit() {
            v = v.checked_mul(10)?.checked_add(u64::from(b[i] - b'0'))?;
            i += 1;
        }
        let n = i - digits;
        if n == 0 || (n > 1 && b[digits] == b'0') {
            return None;
        }
        // Fractions, exponents and "-0" are left to serde.
        if (i < b.len() && matches!(b[i], b'.' | b'e' | b'E')) || (neg && v == 0) {
            return None;
        }
        self.at = i;
        Some((neg, v))
    }

    fn u64(&mut self) -> Option<u64> {
        match self.int()? {
            (false, v) => Some(v),
            _ => None,
        }
    }

    fn i64(&mut self) -> Option<i64> {
        let (neg, v) = self.int()?;
        if neg {
            if v <= i64::MAX as u64 + 1 {
                Some((v as i64).wrapping_neg())
            } else {
                None
            }
        } else {
            i64::try_from(v).ok()
        }
    }

    fn bool(&mut self) -> Option<bool> {
        self.ws();
        if self.literal_if("true") {
            Some(true)
        } else if self.literal_if("false") {
            Some(false)
        } else {
            None
        }
    }

    /// Skips any JSON value (validated as strictly as this reader reads).
    fn skip(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.ws();
        match self.peek()? {
            b'"' => self.str().map(|_| ()),
            b'{' => {
                self.at += 1;
                if self.eat(b'}') {
                    return Some(());
                }
                loop {
                    self.str()?;
                    if !self.eat(b':') {
                        return None;
                    }
                    self.skip(depth + 1)?;
                    if self.eat(b',') {
                        continue;
                    }
                    return self.eat(b'}').then_some(());
                }
            }
            b'[' => {
                self.at += 1;
                if self.eat(b']') {
                    return Some(());
                }
                loop {
                    self.skip(depth + 1)?;
                    if self.eat(b',') {
                        continue;
                    }
                    return self.eat(b']').then_some(());
                }
            }
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            _ => self.int().map(|_| ()),
        }
    }

    /// Reads an object's members: `f` gets each key and reads its value.
    fn object(&mut self, mut f: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        if !self.eat(b'{') {
            return None;
        }
        if self.eat(b'}') {
            return Some(());
        }
        loop {
            let k = self.str()?;
            if !self.eat(b':') {
                return None;
            }
            f(self, k)?;
            if self.eat(b',') {
                continue;
            }
            return self.eat(b'}').then_some(());
        }
    }

    /// `None` for `null`, else a borrowed string.
    fn opt_str(&mut self) -> Option<Option<Str<'a>>> {
        if self.null() {
            Some(None)
        } else {
            self.str().map(|s| Some(Str(Cow::Borrowed(s))))
        }
    }

    fn opt<T>(&mut self, read: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        if self.null() {
            Some(None)
        } else {
            read(self).map(Some)
        }
    }
}

/// Sets `slot` once; a second time is a duplicate field (serde's error).
fn once<T>(slot: &mut Option<T>, v: T) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(v);
    Some(())
}

fn op<'a>(s: &mut Scan<'a>) -> Option<OpIn<'a>> {
    // Outer `Some`: the field was present (twice is serde's error).
    let mut id: Option<Option<AnyId>> = None;
    let mut client = None;
    let mut key = None;
    let mut f = None;
    let mut value: Option<Option<Str<'a>>> = None;
    let mut expect: Option<Option<Str<'a>>> = None;
    let mut expect_version: Option<Option<u64>> = None;
    let mut call = None;
    let mut ret: Option<Option<i64>> = None;
    let mut out: Option<Option<OutIn<'a>>> = None;
    s.object(|s, k| match k {
        "id" => {
            // Any value; an id only when it is a non-negative integer.
            let v = if s.null() {
                None
            } else {
                s.ws();
                match s.peek()? {
                    b'-' | b'0'..=b'9' => match s.int()? {
                        (false, v) => Some(AnyId(Some(v))),
                        (true, _) => Some(AnyId(None)),
                    },
                    _ => {
                        s.skip(1)?;
                        Some(AnyId(None))
                    }
                }
            };
            once(&mut id, v)
        }
        "client" => once(&mut client, s.u64()?),
        "key" => once(&mut key, s.str()?),
        "f" => once(
            &mut f,
            match s.str()? {
                "get" => FIn::Get,
                "put" => FIn::Put,
                "cas" => FIn::Cas,
                "cput" => FIn::Cput,
                "append" => FIn::Append,
                _ => return None,
            },
        ),
        "value" => once(&mut value, s.opt_str()?),
        "expect" => once(&mut expect, s.opt_str()?),
        "expect_version" => once(&mut expect_version, s.opt(Scan::u64)?),
        "call" => once(&mut call, s.i64()?),
        "ret" => once(&mut ret, s.opt(Scan::i64)?),
        "out" => once(&mut out, s.opt(out_in)?),
        _ => s.skip(1),
    })?;
    Some(OpIn {
        id: id.flatten(),
        client: client?,
        key: Cow::Borrowed(key?),
        f: f?,
        value: value.flatten(),
        expect,
        expect_version: expect_version.flatten(),
        call: call?,
        ret: ret.flatten(),
        out: out.flatten(),
    })
}

fn out_in<'a>(s: &mut Scan<'a>) -> Option<OutIn<'a>> {
    let mut value: Option<Option<Str<'a>>> = None;
    let mut version: Option<Option<u64>> = None;
    let mut ok: Option<Option<bool>> = None;
    s.object(|s, k| match k {
        "value" => once(&mut value, s.opt_str()?),
        "version" => once(&mut version, s.opt(Scan::u64)?),
        "ok" => once(&mut ok, s.opt(Scan::bool)?),
        _ => s.skip(2),
    })?;
    Some(OutIn {
        value,
        version: version.flatten(),
        ok: ok.flatten(),
    })
}

fn init_in<'a>(s: &mut Scan<'a>) -> Option<InitIn<'a>> {
    let mut value: Option<Option<Str<'a>>> = None;
    let mut version: Option<Option<u64>> = None;
    s.object(|s, k| match k {
        "value" => once(&mut value, s.opt_str()?),
        "version" => once(&mut version, s.opt(Scan::u64)?),
        _ => s.skip(2),
    })?;
    Some(InitIn {
        value: value.flatten(),
        version: version.flatten(),
    })
}

/// Reads the document into `g` (as `parse_fast` does); `None` when this
/// reader cannot say exactly what serde would.
pub(super) fn scan(text: &str, g: &mut Gathered) -> Option<()> {
    let mut s = Scan { text, at: 0 };
    let (mut format, mut meta, mut init, mut ops) = (false, false, false, false);
    let seen = |flag: &mut bool| (!std::mem::replace(flag, true)).then_some(());
    s.object(|s, k| match k {
        "format" => {
            seen(&mut format)?;
            g.format_ok = s.opt_str()?.is_none_or(|f| &*f == "kvhist/1");
            Some(())
        }
        "meta" => {
            seen(&mut meta)?;
            if s.null() {
                return Some(());
            }
            let mut expected: Option<Option<String>> = None;
            s.object(|s, k| match k {
                "expected" => {
                    s.ws();
                    let v = if s.peek() == Some(b'"') {
                        Some(s.str()?.to_string())
                    } else {
                        s.skip(2)?;
                        None
                    };
                    once(&mut expected, v)
                }
                _ => s.skip(2),
            })?;
            g.expected = expected.flatten();
            Some(())
        }
        "init" => {
            seen(&mut init)?;
            if s.null() {
                return Some(());
            }
            // A map: later duplicates replace earlier ones, as in serde.
            let mut entries = std::collections::BTreeMap::new();
            s.object(|s, k| {
                entries.insert(k.to_string(), init_in(s)?);
                Some(())
            })?;
            for (k, st) in entries {
                let st = st.state(&mut g.intern);
                g.track |= st.version != 0;
                g.init.insert(k, st);
            }
            Some(())
        }
        "ops" => {
            seen(&mut ops)?;
            g.seen_ops = true;
            // About one operation per hundred bytes (the generator's and
            // Porcupine's files): one allocation instead of a dozen
            // doublings and copies.
            g.ops.reserve(text.len() / 100);
            if !s.eat(b'[') {
                return None;
            }
            if s.eat(b']') {
                return Some(());
            }
            loop {
                let o = op(s)?;
                let i = g.ops.len();
                let (op, mentions) = op_from(i, o, &mut g.intern).ok()?;
                g.track |= mentions;
                g.ops.push(op);
                if s.eat(b',') {
                    continue;
                }
                return s.eat(b']').then_some(());
            }
        }
        _ => s.skip(1),
    })?;
    s.ws();
    (s.at == text.len()).then_some(())
}
