//! Tokens of the rule language.

use super::error::SyntaxError;

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    Num(f64, String),
    Ident(String),
    Str(String),
    Op(&'static str),
}

pub(super) fn lex(src: &str) -> Result<Vec<Tok>, SyntaxError> {
    let chars: Vec<char> = src.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit()))
        {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                i += 1;
            }
            if i < chars.len() && (chars[i] == 'e' || chars[i] == 'E') {
                let mut j = i + 1;
                if j < chars.len() && (chars[j] == '+' || chars[j] == '-') {
                    j += 1;
                }
                if j < chars.len() && chars[j].is_ascii_digit() {
                    i = j;
                    while i < chars.len() && chars[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            let text: String = chars[start..i].iter().collect();
            let v = text
                .parse::<f64>()
                .map_err(|_| SyntaxError::NotANumber(text.clone()))?;
            out.push(Tok::Num(v, text));
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || matches!(chars[i], '_' | '.' | '-'))
            {
                // A '-' belongs to a name only when followed by a letter (kebab-case keys);
                // `a-b` between two columns would be ambiguous, so write `a - b`.
                if chars[i] == '-' && !chars.get(i + 1).is_some_and(|n| n.is_ascii_alphabetic()) {
                    break;
                }
                i += 1;
            }
            out.push(Tok::Ident(chars[start..i].iter().collect()));
        } else if c == '"' || c == '\'' {
            let end = chars[i + 1..]
                .iter()
                .position(|&d| d == c)
                .ok_or(SyntaxError::UnterminatedString)?;
            out.push(Tok::Str(chars[i + 1..i + 1 + end].iter().collect()));
            i += end + 2;
        } else {
            let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
            let op = ["<=", ">=", "==", "!="]
                .into_iter()
                .find(|o| *o == two)
                .or_else(|| {
                    ["<", ">", "+", "-", "*", "/", "(", ")", ",", "=", ":", "%"]
                        .into_iter()
                        .find(|o| o.starts_with(c))
                })
                .ok_or(SyntaxError::UnexpectedChar(c))?;
            i += op.len();
            out.push(Tok::Op(op));
        }
    }
    Ok(out)
}

pub(super) fn show(t: &Tok) -> String {
    match t {
        Tok::Num(_, s) => format!("`{s}`"),
        Tok::Ident(s) => format!("`{s}`"),
        Tok::Str(s) => format!("\"{s}\""),
        Tok::Op(o) => format!("`{o}`"),
    }
}
