//! A tolerant JSON reader for rt-app files (spec/ecosystem.md §1.4 "Parsing quirks").
//!
//! rt-app files are JSON with C comments (`/* */`, `//`), trailing commas and duplicate keys
//! whose *order* is meaningful (`"run", "sleep", "run"` in one phase). Objects are therefore
//! kept as ordered key/value lists, never maps, and every key and value carries its line and
//! column so that errors can name them. Also accepted: single-quoted strings, and a key with no
//! value (`"suspend",` in the shipped video examples, which rt-app's `workgen` completed with
//! the task's name), read as `null`.

use std::fmt;

/// A position in the file, 1-based.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pos {
    pub line: u32,
    pub col: u32,
}

/// A JSON value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Array(Vec<Node>),
    /// Members in file order, duplicates kept.
    Object(Vec<Member>),
}

/// A value with the position where it starts.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub pos: Pos,
    pub value: Value,
}

/// One `"key": value` of an object.
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    pub key: String,
    pub pos: Pos,
    /// `null` at the key's position when the key had no value.
    pub value: Node,
}

impl Value {
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        }
    }
}

/// A syntax error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub pos: Pos,
    /// The keys leading to the error, outermost first.
    pub path: Vec<String>,
    pub msg: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}: ", self.pos.line, self.pos.col)?;
        if !self.path.is_empty() {
            write!(f, "in '{}': ", self.path.join("."))?;
        }
        write!(f, "{}", self.msg)
    }
}

/// Parse a whole document: one value, then only whitespace and comments.
pub fn parse(text: &str) -> Result<Node, ParseError> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
        line: 1,
        col: 1,
        path: Vec::new(),
        depth: 0,
    };
    p.skip_ws()?;
    let v = p.value()?;
    p.skip_ws()?;
    if p.i < p.s.len() {
        return Err(p.err(format!(
            "unexpected {} after the end of the document",
            p.describe_here()
        )));
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    line: u32,
    col: u32,
    path: Vec<String>,
    depth: u32,
}

const MAX_DEPTH: u32 = 256;

impl Parser<'_> {
    fn pos(&self) -> Pos {
        Pos {
            line: self.line,
            col: self.col,
        }
    }

    fn err(&self, msg: String) -> ParseError {
        self.err_at(self.pos(), msg)
    }

    fn err_at(&self, pos: Pos, msg: String) -> ParseError {
        ParseError {
            pos,
            path: self.path.clone(),
            msg,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn bump(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        if c == b'\n' {
            self.line += 1;
            self.col = 1;
        } else if c & 0xC0 != 0x80 {
            // count characters, not UTF-8 continuation bytes
            self.col += 1;
        }
        Some(c)
    }

    fn describe_here(&self) -> String {
        match self.peek() {
            None => "end of file".into(),
            Some(c) if c.is_ascii_graphic() => format!("'{}'", c as char),
            Some(c) => format!("byte 0x{c:02x}"),
        }
    }

    /// Skip whitespace and comments.
    fn skip_ws(&mut self) -> Result<(), ParseError> {
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\n' | b'\r') => {
                    self.bump();
                }
                Some(0xEF) if self.s[self.i..].starts_with(&[0xEF, 0xBB, 0xBF]) => {
                    // byte-order mark
                    self.i += 3;
                }
                Some(b'/') => {
                    let start = self.pos();
                    match self.s.get(self.i + 1) {
                        Some(b'/') => {
                            while let Some(c) = self.peek() {
                                if c == b'\n' {
                                    break;
                                }
                                self.bump();
                            }
                        }
                        Some(b'*') => {
                            self.bump();
                            self.bump();
                            loop {
                                match self.bump() {
                                    None => {
                                        return Err(
                                            self.err_at(start, "unterminated comment '/*'".into())
                                        )
                                    }
                                    Some(b'*') if self.peek() == Some(b'/') => {
                                        self.bump();
                                        break;
                                    }
                                    Some(_) => {}
                                }
                            }
                        }
                        _ => return Ok(()),
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn value(&mut self) -> Result<Node, ParseError> {
        let pos = self.pos();
        let value = match self.peek() {
            None => return Err(self.err("expected a value, found end of file".into())),
            Some(b'{') => self.object()?,
            Some(b'[') => self.array()?,
            Some(q @ (b'"' | b'\'')) => Value::Str(self.string(q)?),
            Some(b'-' | b'0'..=b'9') => self.number()?,
            Some(c) if c.is_ascii_alphabetic() => {
                let start = self.i;
                while matches!(self.peek(), Some(c) if c.is_ascii_alphanumeric() || c == b'_') {
                    self.bump();
                }
                let word = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("?");
                match word {
                    "true" => Value::Bool(true),
                    "false" => Value::Bool(false),
                    "null" => Value::Null,
                    _ => {
                        return Err(self.err_at(
                            pos,
                            format!(
                                "expected a value, found '{word}' (strings need double quotes)"
                            ),
                        ))
                    }
                }
            }
            Some(_) => {
                return Err(self.err(format!("expected a value, found {}", self.describe_here())))
            }
        };
        Ok(Node { pos, value })
    }

    fn enter(&mut self) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err(format!("nesting deeper than {MAX_DEPTH} levels")));
        }
        Ok(())
    }

    fn object(&mut self) -> Result<Value, ParseError> {
        self.enter()?;
        let open = self.pos();
        self.bump(); // {
        let mut members = Vec::new();
        loop {
            self.skip_ws()?;
            match self.peek() {
                None => {
                    return Err(self.err_at(open, "unterminated object: missing '}'".into()));
                }
                Some(b'}') => {
                    self.bump();
                    break;
                }
                Some(q @ (b'"' | b'\'')) => {
                    let kpos = self.pos();
                    let key = self.string(q)?;
                    self.skip_ws()?;
                    let value = match self.peek() {
                        Some(b':') => {
                            self.bump();
                            self.skip_ws()?;
                            self.path.push(key.clone());
                            let v = self.value()?;
                            self.path.pop();
                            v
                        }
                        // a key without a value: read as null
                        Some(b',' | b'}') => Node {
                            pos: kpos,
                            value: Value::Null,
                        },
                        _ => {
                            self.path.push(key.clone());
                            let e = self.err(format!(
                                "expected ':' after the key, found {}",
                                self.describe_here()
                            ));
                            self.path.pop();
                            return Err(e);
                        }
                    };
                    members.push(Member {
                        key,
                        pos: kpos,
                        value,
                    });
                    self.skip_ws()?;
                    match self.peek() {
                        Some(b',') => {
                            self.bump();
                        }
                        Some(b'}') => {}
                        None => {
                            return Err(
                                self.err_at(open, "unterminated object: missing '}'".into())
                            );
                        }
                        _ => {
                            let last = members.last().map(|m| m.key.clone()).unwrap_or_default();
                            self.path.push(last);
                            let e = self.err(format!(
                                "expected ',' or '}}' after the value, found {}",
                                self.describe_here()
                            ));
                            self.path.pop();
                            return Err(e);
                        }
                    }
                }
                Some(_) => {
                    let after = members
                        .last()
                        .map(|m: &Member| format!(" (after key '{}')", m.key))
                        .unwrap_or_default();
                    return Err(self.err(format!(
                        "expected a quoted key or '}}', found {}{after}",
                        self.describe_here()
                    )));
                }
            }
        }
        self.depth -= 1;
        Ok(Value::Object(members))
    }

    fn array(&mut self) -> Result<Value, ParseError> {
        self.enter()?;
        let open = self.pos();
        self.bump(); // [
        let mut items = Vec::new();
        loop {
            self.skip_ws()?;
            match self.peek() {
                None => return Err(self.err_at(open, "unterminated array: missing ']'".into())),
                Some(b']') => {
                    self.bump();
                    break;
                }
                Some(_) => {
                    items.push(self.value()?);
                    self.skip_ws()?;
                    match self.peek() {
                        Some(b',') => {
                            self.bump();
                        }
                        Some(b']') => {}
                        None => {
                            return Err(self.err_at(open, "unterminated array: missing ']'".into()))
                        }
                        _ => {
                            return Err(self.err(format!(
                                "expected ',' or ']' in an array, found {}",
                                self.describe_here()
                            )))
                        }
                    }
                }
            }
        }
        self.depth -= 1;
        Ok(Value::Array(items))
    }

    fn string(&mut self, quote: u8) -> Result<String, ParseError> {
        let start = self.pos();
        self.bump();
        let mut out: Vec<u8> = Vec::new();
        loop {
            match self.bump() {
                None | Some(b'\n') => {
                    return Err(self.err_at(start, "unterminated string".into()));
                }
                Some(c) if c == quote => break,
                Some(b'\\') => {
                    let epos = self.pos();
                    match self.bump() {
                        Some(b'"') => out.push(b'"'),
                        Some(b'\'') => out.push(b'\''),
                        Some(b'\\') => out.push(b'\\'),
                        Some(b'/') => out.push(b'/'),
                        Some(b'b') => out.push(8),
                        Some(b'f') => out.push(12),
                        Some(b'n') => out.push(b'\n'),
                        Some(b'r') => out.push(b'\r'),
                        Some(b't') => out.push(b'\t'),
                        Some(b'u') => {
                            let mut cp = self.hex4(epos)?;
                            if (0xD800..0xDC00).contains(&cp) {
                                if self.peek() == Some(b'\\')
                                    && self.s.get(self.i + 1) == Some(&b'u')
                                {
                                    self.bump();
                                    self.bump();
                                    let lo = self.hex4(epos)?;
                                    if !(0xDC00..0xE000).contains(&lo) {
                                        return Err(self.err_at(
                                            epos,
                                            "invalid surrogate pair in \\u escape".into(),
                                        ));
                                    }
                                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                                } else {
                                    return Err(
                                        self.err_at(epos, "lone surrogate in \\u escape".into())
                                    );
                                }
                            }
                            let ch = char::from_u32(cp).ok_or_else(|| {
                                self.err_at(epos, format!("invalid \\u escape U+{cp:04X}"))
                            })?;
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        }
                        _ => return Err(self.err_at(epos, "invalid escape in string".into())),
                    }
                }
                Some(c) => out.push(c),
            }
        }
        String::from_utf8(out).map_err(|_| self.err_at(start, "string is not valid UTF-8".into()))
    }

    fn hex4(&mut self, epos: Pos) -> Result<u32, ParseError> {
        let mut v = 0u32;
        for _ in 0..4 {
            let d = self
                .bump()
                .and_then(|c| (c as char).to_digit(16))
                .ok_or_else(|| self.err_at(epos, "\\u escape needs 4 hex digits".into()))?;
            v = v * 16 + d;
        }
        Ok(v)
    }

    fn number(&mut self) -> Result<Value, ParseError> {
        let pos = self.pos();
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.bump();
        }
        let digits = |p: &mut Self| {
            let s = p.i;
            while matches!(p.peek(), Some(b'0'..=b'9')) {
                p.bump();
            }
            p.i - s
        };
        if digits(self) == 0 {
            return Err(self.err_at(pos, "expected digits in a number".into()));
        }
        let mut float = false;
        if self.peek() == Some(b'.') {
            float = true;
            self.bump();
            if digits(self) == 0 {
                return Err(self.err_at(pos, "expected digits after '.' in a number".into()));
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            float = true;
            self.bump();
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.bump();
            }
            if digits(self) == 0 {
                return Err(self.err_at(pos, "expected digits in a number's exponent".into()));
            }
        }
        let text = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("0");
        if !float {
            if let Ok(v) = text.parse::<i64>() {
                return Ok(Value::Int(v));
            }
        }
        text.parse::<f64>()
            .map(Value::Float)
            .map_err(|_| self.err_at(pos, format!("bad number '{text}'")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(v: &Node) -> Vec<String> {
        match &v.value {
            Value::Object(m) => m.iter().map(|m| m.key.clone()).collect(),
            _ => panic!("not an object"),
        }
    }

    #[test]
    fn comments_trailing_commas_and_duplicate_keys_in_order() {
        let v = parse(
            "{ /* c */ \"run\": 1, // x\n \"sleep\": 2, \"run\": 3, \"a\": [1, 2,], }\n// end",
        )
        .unwrap();
        assert_eq!(keys(&v), ["run", "sleep", "run", "a"]);
        let Value::Object(m) = &v.value else {
            unreachable!()
        };
        assert_eq!(m[2].value.value, Value::Int(3));
        assert_eq!(m[1].pos, Pos { line: 2, col: 2 });
    }

    #[test]
    fn bare_key_is_null_and_numbers() {
        let v = parse("{\"suspend\", \"x\": -1.5e2, \"y\": 12}").unwrap();
        let Value::Object(m) = &v.value else {
            unreachable!()
        };
        assert_eq!(m[0].value.value, Value::Null);
        assert_eq!(m[1].value.value, Value::Float(-150.0));
        assert_eq!(m[2].value.value, Value::Int(12));
    }

    #[test]
    fn errors_name_line_and_key() {
        let e =
            parse("{\n \"tasks\": {\n  \"t\": {\n   \"run\": 10 \"sleep\": 5\n }}}").unwrap_err();
        assert_eq!(e.pos.line, 4);
        assert_eq!(e.path, ["tasks", "t", "run"]);
        assert!(e.to_string().contains("expected ',' or '}'"), "{e}");
        let e = parse("{\"a\": {\"b\": }}").unwrap_err();
        assert_eq!(e.path, ["a", "b"]);
        assert!(parse("{\"a\": 1 /* open").is_err());
        assert!(parse("{\"a\": tru}").is_err());
        assert!(parse("{} x").is_err());
        assert!(parse("{\"a\": \"x\\u00e9\"}").is_ok());
    }
}
