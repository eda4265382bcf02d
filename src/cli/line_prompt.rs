//! The terminal client's free-text prompt: inquire's `Text` as it looks (the same lines, prefixes,
//! colours, help and validation messages, from the same render configuration), with the usual
//! line-editing keys, which inquire 0.9 has no way to add (its keys are fixed and typed Ctrl-A as
//! an "a"):
//!
//! | keys                                 | does                              |
//! |--------------------------------------|-----------------------------------|
//! | Ctrl-A, Home / Ctrl-E, End           | to the start / end of the line    |
//! | Left, Ctrl-B / Right, Ctrl-F         | one character back / forward      |
//! | Ctrl-Left, Alt-B / Ctrl-Right, Alt-F | one word back / forward           |
//! | Backspace, Ctrl-H / Delete           | delete the character before / at  |
//! | Ctrl-U / Ctrl-K                      | delete to the start / to the end  |
//! | Ctrl-W                               | delete the word before (to a space) |
//! | Alt-Backspace, Ctrl-Backspace / Alt-D, Ctrl-Delete | delete a word before / after |
//! | Enter                                | send (when the validators agree)  |
//! | Esc (Ctrl-D on an empty line)        | cancel, as inquire does           |
//! | Ctrl-C                               | interrupt, as inquire does        |
//!
//! Other control and Alt keys do nothing (rather than type their letter). Keys come from crossterm,
//! the backend inquire itself reads them with.

use std::io::{self, Write};

use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use crossterm::style::{Attribute, Print, SetAttribute, SetBackgroundColor, SetForegroundColor};
use crossterm::{cursor, queue, terminal};
use inquire::InquireError;
use inquire::ui::{Attributes, Color, RenderConfig, StyleSheet, Styled};
use inquire::validator::{ErrorMessage, StringValidator, Validation};
use unicode_width::UnicodeWidthChar;

/// How every prompt of the client renders: inquire's defaults (plain under `NO_COLOR`), and nothing
/// after a canceled prompt's title (see [`super::prompt::erased`]).
pub fn render_config() -> RenderConfig<'static> {
    RenderConfig::default().with_canceled_prompt_indicator(Styled::new(""))
}

/// A free-text prompt, built as inquire's `Text` is.
pub struct LineText<'a> {
    message: &'a str,
    help_message: Option<&'a str>,
    default: Option<&'a str>,
    initial_value: Option<&'a str>,
    validators: Vec<Box<dyn StringValidator + 'a>>,
}

impl<'a> LineText<'a> {
    pub fn new(message: &'a str) -> Self {
        LineText {
            message,
            help_message: None,
            default: None,
            initial_value: None,
            validators: Vec::new(),
        }
    }

    pub fn with_help_message(mut self, help_message: &'a str) -> Self {
        self.help_message = Some(help_message);
        self
    }

    /// What Enter on an empty line gives; shown as `(default)` before the input.
    pub fn with_default(mut self, default: &'a str) -> Self {
        self.default = Some(default);
        self
    }

    /// The text the line starts with, to be edited.
    pub fn with_initial_value(mut self, value: &'a str) -> Self {
        self.initial_value = Some(value);
        self
    }

    pub fn with_validator(mut self, validator: impl StringValidator + 'a) -> Self {
        self.validators.push(Box::new(validator));
        self
    }

    /// Asks on stderr until Enter with a valid answer (`Ok`), Esc (`OperationCanceled`) or Ctrl-C
    /// (`OperationInterrupted`); `NotTTY` without a terminal.
    pub fn prompt(self) -> Result<String, InquireError> {
        let config = render_config();
        let _raw = RawMode::enable()?;
        let mut screen = Screen::new();
        let mut line = Line::new(self.initial_value.unwrap_or_default());
        let mut error: Option<String> = None;
        let mut redraw = true;
        loop {
            if redraw {
                let frame = self.frame(&config, &line, error.as_deref());
                screen.draw(&frame, false)?;
            }
            redraw = true;
            let key = match event::read() {
                Ok(Event::Key(key)) if key.kind != KeyEventKind::Release => key,
                Ok(Event::Paste(text)) => {
                    line.insert_str(&text);
                    continue;
                }
                Ok(Event::Resize(..)) => continue,
                Ok(_) => {
                    redraw = false;
                    continue;
                }
                Err(read) => {
                    screen.leave()?;
                    return Err(read.into());
                }
            };
            match command(key, line.is_empty()) {
                Some(Command::Edit(edit)) => redraw = line.apply(edit),
                Some(Command::Submit) => {
                    let answer = match (line.text(), self.default) {
                        (text, Some(default)) if text.is_empty() => default.to_owned(),
                        (text, _) => text,
                    };
                    match self.validate(&answer, &config) {
                        Ok(None) => {
                            screen.draw(&answered(&config, self.message, &answer), true)?;
                            return Ok(answer);
                        }
                        Ok(Some(message)) => error = Some(message),
                        Err(failed) => {
                            screen.leave()?;
                            return Err(failed);
                        }
                    }
                }
                Some(Command::Cancel) => {
                    screen.draw(&canceled(&config, self.message), true)?;
                    return Err(InquireError::OperationCanceled);
                }
                Some(Command::Interrupt) => {
                    screen.leave()?;
                    return Err(InquireError::OperationInterrupted);
                }
                None => redraw = false,
            }
        }
    }

    /// `None` when every validator takes `answer`, else the first one's message.
    fn validate(
        &self,
        answer: &str,
        config: &RenderConfig<'_>,
    ) -> Result<Option<String>, InquireError> {
        for validator in &self.validators {
            match validator.validate(answer) {
                Ok(Validation::Valid) => {}
                Ok(Validation::Invalid(ErrorMessage::Custom(message))) => return Ok(Some(message)),
                Ok(Validation::Invalid(ErrorMessage::Default)) => {
                    return Ok(Some(config.error_message.default_message.to_owned()));
                }
                Err(error) => return Err(InquireError::Custom(error)),
            }
        }
        Ok(None)
    }

    /// The open prompt: the last validation message, the prompt line, the help line.
    fn frame(&self, config: &RenderConfig<'_>, line: &Line, error: Option<&str>) -> Frame {
        let mut frame = Frame::default();
        if let Some(error) = error {
            let mut row = Row::default();
            row.push(
                config.error_message.prefix.content,
                config.error_message.prefix.style,
            );
            row.push(" ", config.error_message.separator);
            row.push(error, config.error_message.message);
            frame.rows.push(row);
        }
        let mut row = title(config.prompt_prefix, config, self.message);
        if let Some(default) = self.default {
            row.push(&format!("({default})"), config.default_value);
            row.push(" ", StyleSheet::empty());
        }
        let before_cursor: String = line.chars[..line.cursor].iter().collect();
        frame.cursor = Some((frame.rows.len(), row.width + shown(&before_cursor).1));
        row.push(&shown(&line.text()).0, config.text_input);
        // A cursor at the end sits on a blank, not on the next line.
        if line.cursor == line.chars.len() {
            row.push(" ", StyleSheet::empty());
        }
        frame.rows.push(row);
        if let Some(help) = self.help_message {
            let mut row = Row::default();
            row.push(&format!("[{help}]"), config.help_message);
            frame.rows.push(row);
        }
        frame
    }
}

/// `? message ` in the prompt's style, with `prefix`.
fn title(prefix: Styled<&str>, config: &RenderConfig<'_>, message: &str) -> Row {
    let mut row = Row::default();
    row.push(prefix.content, prefix.style);
    row.push(" ", StyleSheet::empty());
    if !message.is_empty() {
        row.push(message, config.prompt);
        row.push(" ", StyleSheet::empty());
    }
    row
}

/// What stays once answered: `> message answer`.
fn answered(config: &RenderConfig<'_>, message: &str, answer: &str) -> Frame {
    let mut frame = Frame::default();
    let mut row = title(config.answered_prompt_prefix, config, message);
    for (index, text) in answer.lines().enumerate() {
        if index > 0 {
            frame.rows.push(std::mem::take(&mut row));
        }
        row.push(text, config.answer);
    }
    frame.rows.push(row);
    frame
}

/// What a canceled prompt leaves: its title and the (empty) canceled mark, one line that
/// [`super::prompt::erased`] then takes away.
fn canceled(config: &RenderConfig<'_>, message: &str) -> Frame {
    let mut row = title(config.prompt_prefix, config, message);
    let mark = config.canceled_prompt_indicator;
    row.push(mark.content, mark.style);
    Frame {
        rows: vec![row],
        cursor: None,
    }
}

/// Text as shown on one line (control characters, such as a pasted newline, as blanks) and its
/// width in columns.
fn shown(text: &str) -> (String, usize) {
    let shown: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let width = shown.chars().map(|c| c.width().unwrap_or(0)).sum();
    (shown, width)
}

/// What a key does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Command {
    Submit,
    Cancel,
    Interrupt,
    Edit(Edit),
}

/// The readline keys, Emacs style (see the module's table); `empty`: whether the line is, for
/// Ctrl-D.
fn command(key: KeyEvent, empty: bool) -> Option<Command> {
    let control = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    let edit = match key.code {
        KeyCode::Enter => return Some(Command::Submit),
        KeyCode::Esc => return Some(Command::Cancel),
        KeyCode::Char(c) if control && !alt => match c {
            'c' => return Some(Command::Interrupt),
            'j' | 'm' => return Some(Command::Submit),
            'g' => return Some(Command::Cancel),
            'd' if empty => return Some(Command::Cancel),
            'd' => Edit::DeleteRight,
            'a' => Edit::Start,
            'e' => Edit::End,
            'b' => Edit::Left,
            'f' => Edit::Right,
            'h' => Edit::DeleteLeft,
            'u' => Edit::DeleteToStart,
            'k' => Edit::DeleteToEnd,
            'w' => Edit::DeleteSpacedWordLeft,
            _ => return None,
        },
        KeyCode::Char(c) if alt && !control => match c {
            'b' => Edit::WordLeft,
            'f' => Edit::WordRight,
            'd' => Edit::DeleteWordRight,
            _ => return None,
        },
        KeyCode::Char(_) if control || alt => return None,
        KeyCode::Char(c) => Edit::Insert(c),
        KeyCode::Home => Edit::Start,
        KeyCode::End => Edit::End,
        KeyCode::Left if control || alt => Edit::WordLeft,
        KeyCode::Left => Edit::Left,
        KeyCode::Right if control || alt => Edit::WordRight,
        KeyCode::Right => Edit::Right,
        KeyCode::Backspace if control || alt => Edit::DeleteWordLeft,
        KeyCode::Backspace => Edit::DeleteLeft,
        KeyCode::Delete if control || alt => Edit::DeleteWordRight,
        KeyCode::Delete => Edit::DeleteRight,
        _ => return None,
    };
    Some(Command::Edit(edit))
}

/// A change to the line or its cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Edit {
    Insert(char),
    Left,
    Right,
    /// To the start of the word before (words: letters and digits).
    WordLeft,
    /// To the end of the word after.
    WordRight,
    Start,
    End,
    DeleteLeft,
    DeleteRight,
    DeleteToStart,
    DeleteToEnd,
    /// Back to the space before the word before (readline's unix-word-rubout, Ctrl-W).
    DeleteSpacedWordLeft,
    /// Back to the start of the word before (readline's backward-kill-word).
    DeleteWordLeft,
    /// To the end of the word after (readline's kill-word).
    DeleteWordRight,
}

/// The line being edited, and the cursor: an index into its characters.
#[derive(Debug, Default)]
struct Line {
    chars: Vec<char>,
    cursor: usize,
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric()
}

impl Line {
    fn new(text: &str) -> Line {
        let chars: Vec<char> = text.chars().collect();
        Line {
            cursor: chars.len(),
            chars,
        }
    }

    fn text(&self) -> String {
        self.chars.iter().collect()
    }

    fn is_empty(&self) -> bool {
        self.chars.is_empty()
    }

    fn insert_str(&mut self, text: &str) {
        // A pasted line break is kept in the answer ("\r\n" and "\r" as "\n").
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        for c in text.chars() {
            self.apply(Edit::Insert(c));
        }
    }

    /// Where the word before the cursor starts: back over what `inside` refuses, then over what it
    /// takes.
    fn word_start(&self, inside: impl Fn(char) -> bool) -> usize {
        let mut at = self.cursor;
        while at > 0 && !inside(self.chars[at - 1]) {
            at -= 1;
        }
        while at > 0 && inside(self.chars[at - 1]) {
            at -= 1;
        }
        at
    }

    /// Where the word after the cursor ends.
    fn word_end(&self) -> usize {
        let mut at = self.cursor;
        while at < self.chars.len() && !is_word(self.chars[at]) {
            at += 1;
        }
        while at < self.chars.len() && is_word(self.chars[at]) {
            at += 1;
        }
        at
    }

    /// Applies `edit`; whether anything changed.
    fn apply(&mut self, edit: Edit) -> bool {
        let (cursor, len) = (self.cursor, self.chars.len());
        match edit {
            Edit::Insert(c) => {
                self.chars.insert(cursor, c);
                self.cursor += 1;
            }
            Edit::Left => self.cursor = cursor.saturating_sub(1),
            Edit::Right => self.cursor = (cursor + 1).min(len),
            Edit::WordLeft => self.cursor = self.word_start(is_word),
            Edit::WordRight => self.cursor = self.word_end(),
            Edit::Start => self.cursor = 0,
            Edit::End => self.cursor = len,
            Edit::DeleteLeft if cursor > 0 => {
                self.chars.remove(cursor - 1);
                self.cursor -= 1;
            }
            Edit::DeleteRight if cursor < len => {
                self.chars.remove(cursor);
            }
            Edit::DeleteLeft | Edit::DeleteRight => return false,
            Edit::DeleteToStart => {
                self.chars.drain(..cursor);
                self.cursor = 0;
            }
            Edit::DeleteToEnd => self.chars.truncate(cursor),
            Edit::DeleteSpacedWordLeft => {
                let start = self.word_start(|c| !c.is_whitespace());
                self.chars.drain(start..cursor);
                self.cursor = start;
            }
            Edit::DeleteWordLeft => {
                let start = self.word_start(is_word);
                self.chars.drain(start..cursor);
                self.cursor = start;
            }
            Edit::DeleteWordRight => {
                let end = self.word_end();
                self.chars.drain(cursor..end);
            }
        }
        (self.cursor, self.chars.len()) != (cursor, len) || matches!(edit, Edit::Insert(_))
    }
}

/// Text in one style.
struct Span {
    text: String,
    style: StyleSheet,
}

/// One line of a frame (which the terminal may wrap), and its width in columns.
#[derive(Default)]
struct Row {
    spans: Vec<Span>,
    width: usize,
}

impl Row {
    fn push(&mut self, text: &str, style: StyleSheet) {
        self.width += text.chars().map(|c| c.width().unwrap_or(0)).sum::<usize>();
        self.spans.push(Span {
            text: text.to_owned(),
            style,
        });
    }
}

/// What the prompt shows, and where the cursor goes: a row and a column in it.
#[derive(Default)]
struct Frame {
    rows: Vec<Row>,
    cursor: Option<(usize, usize)>,
}

/// The prompt's lines on stderr, drawn again in place after each key.
struct Screen {
    err: io::Stderr,
    /// Terminal rows the last frame took.
    rows: usize,
    /// The terminal row the cursor is on, from the frame's first.
    cursor_row: usize,
}

impl Screen {
    fn new() -> Screen {
        Screen {
            err: io::stderr(),
            rows: 0,
            cursor_row: 0,
        }
    }

    /// Replaces the last frame with `frame`; a `last` one is left behind, the cursor on the line
    /// after it.
    fn draw(&mut self, frame: &Frame, last: bool) -> io::Result<()> {
        // 80 columns when the terminal does not say, as inquire assumes.
        let width = match terminal::size() {
            Ok((columns, _)) if columns > 0 => usize::from(columns),
            _ => 80,
        };
        let err = &mut self.err;
        queue!(err, cursor::Hide)?;
        if self.cursor_row > 0 {
            queue!(err, cursor::MoveUp(to_u16(self.cursor_row)))?;
        }
        queue!(
            err,
            Print("\r"),
            terminal::Clear(terminal::ClearType::FromCursorDown)
        )?;
        // The terminal row each line starts on.
        let mut starts = Vec::with_capacity(frame.rows.len());
        let mut rows = 0;
        for (index, row) in frame.rows.iter().enumerate() {
            if index > 0 {
                queue!(err, Print("\r\n"))?;
            }
            starts.push(rows);
            rows += row.width.div_ceil(width).max(1);
            for span in &row.spans {
                styled(err, span)?;
            }
        }
        // At the start of the last row (which also ends a pending wrap).
        queue!(err, Print("\r"))?;
        let last_row = rows.saturating_sub(1);
        if last {
            queue!(err, Print("\r\n"))?;
            self.rows = 0;
            self.cursor_row = 0;
        } else {
            self.rows = rows;
            self.cursor_row = last_row;
            if let Some((line, column)) = frame.cursor {
                let row = starts[line] + column / width;
                if last_row > row {
                    queue!(err, cursor::MoveUp(to_u16(last_row - row)))?;
                }
                queue!(err, cursor::MoveToColumn(to_u16(column % width)))?;
                self.cursor_row = row;
            }
        }
        queue!(err, cursor::Show)?;
        err.flush()
    }

    /// Leaves the frame as it is, the cursor on the line after it.
    fn leave(&mut self) -> io::Result<()> {
        let below = self.rows.saturating_sub(1).saturating_sub(self.cursor_row);
        if below > 0 {
            queue!(self.err, cursor::MoveDown(to_u16(below)))?;
        }
        queue!(self.err, Print("\r\n"), cursor::Show)?;
        self.rows = 0;
        self.cursor_row = 0;
        self.err.flush()
    }
}

fn to_u16(value: usize) -> u16 {
    u16::try_from(value).unwrap_or(u16::MAX)
}

/// Writes `span` in its style, as inquire's crossterm terminal does.
fn styled(err: &mut io::Stderr, span: &Span) -> io::Result<()> {
    let style = span.style;
    if let Some(fg) = style.fg {
        queue!(err, SetForegroundColor(color(fg)))?;
    }
    if let Some(bg) = style.bg {
        queue!(err, SetBackgroundColor(color(bg)))?;
    }
    if style.att.contains(Attributes::BOLD) {
        queue!(err, SetAttribute(Attribute::Bold))?;
    }
    if style.att.contains(Attributes::ITALIC) {
        queue!(err, SetAttribute(Attribute::Italic))?;
    }
    queue!(err, Print(&span.text))?;
    if style.fg.is_some() {
        queue!(err, SetForegroundColor(crossterm::style::Color::Reset))?;
    }
    if style.bg.is_some() {
        queue!(err, SetBackgroundColor(crossterm::style::Color::Reset))?;
    }
    if !style.att.is_empty() {
        queue!(err, SetAttribute(Attribute::Reset))?;
    }
    Ok(())
}

/// inquire's colours as its crossterm terminal maps them.
fn color(color: Color) -> crossterm::style::Color {
    use crossterm::style::Color as C;
    match color {
        Color::Black => C::Black,
        Color::LightRed => C::Red,
        Color::DarkRed => C::DarkRed,
        Color::LightGreen => C::Green,
        Color::DarkGreen => C::DarkGreen,
        Color::LightYellow => C::Yellow,
        Color::DarkYellow => C::DarkYellow,
        Color::LightBlue => C::Blue,
        Color::DarkBlue => C::DarkBlue,
        Color::LightMagenta => C::Magenta,
        Color::DarkMagenta => C::DarkMagenta,
        Color::LightCyan => C::Cyan,
        Color::DarkCyan => C::DarkCyan,
        Color::White => C::White,
        Color::Grey => C::Grey,
        Color::DarkGrey => C::DarkGrey,
        Color::Rgb { r, g, b } => C::Rgb { r, g, b },
        Color::AnsiValue(value) => C::AnsiValue(value),
    }
}

/// Raw mode and bracketed paste (a pasted line break is text, not Enter) while a prompt is open,
/// as inquire's terminal has them.
struct RawMode;

impl RawMode {
    fn enable() -> Result<RawMode, InquireError> {
        terminal::enable_raw_mode()?;
        if let Err(error) = crossterm::execute!(io::stderr(), event::EnableBracketedPaste) {
            let _ = terminal::disable_raw_mode();
            return Err(error.into());
        }
        Ok(RawMode)
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = crossterm::execute!(io::stderr(), event::DisableBracketedPaste);
        let _ = terminal::disable_raw_mode();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    /// `keys` typed into a line that holds `text`, its cursor at the end.
    fn typed(text: &str, keys: &[KeyEvent]) -> (String, usize) {
        let mut line = Line::new(text);
        for key in keys {
            match command(*key, line.is_empty()) {
                Some(Command::Edit(edit)) => {
                    line.apply(edit);
                }
                other => panic!("{key:?}: {other:?}"),
            }
        }
        (line.text(), line.cursor)
    }

    fn ctrl(c: char) -> KeyEvent {
        key(KeyCode::Char(c), KeyModifiers::CONTROL)
    }

    fn alt(c: char) -> KeyEvent {
        key(KeyCode::Char(c), KeyModifiers::ALT)
    }

    fn chars(text: &str) -> Vec<KeyEvent> {
        text.chars()
            .map(|c| key(KeyCode::Char(c), KeyModifiers::NONE))
            .collect()
    }

    #[test]
    fn ctrl_a_and_ctrl_e_move_to_the_ends() {
        let mut keys = vec![ctrl('a')];
        keys.extend(chars("hello "));
        assert_eq!(typed("world", &keys), ("hello world".into(), 6));
        keys.push(ctrl('e'));
        keys.extend(chars("!"));
        assert_eq!(typed("world", &keys), ("hello world!".into(), 12));
        let home_end = [
            key(KeyCode::Home, KeyModifiers::NONE),
            key(KeyCode::Char('>'), KeyModifiers::NONE),
            key(KeyCode::End, KeyModifiers::NONE),
            key(KeyCode::Char('<'), KeyModifiers::SHIFT),
        ];
        assert_eq!(typed("x", &home_end), (">x<".into(), 3));
    }

    #[test]
    fn ctrl_u_k_and_w_delete() {
        assert_eq!(typed("junk", &[ctrl('u')]), (String::new(), 0));
        let left2 = key(KeyCode::Left, KeyModifiers::NONE);
        assert_eq!(
            typed("abcdef", &[left2, left2, ctrl('u')]),
            ("ef".into(), 0)
        );
        assert_eq!(
            typed("abcdef", &[left2, left2, ctrl('k')]),
            ("abcd".into(), 4)
        );
        assert_eq!(typed("abc def", &[ctrl('w')]), ("abc ".into(), 4));
        assert_eq!(typed("abc def  ", &[ctrl('w')]), ("abc ".into(), 4));
        assert_eq!(typed("a path/to-it", &[ctrl('w')]), ("a ".into(), 2));
        let alt_backspace = key(KeyCode::Backspace, KeyModifiers::ALT);
        assert_eq!(
            typed("a path/to-it", &[alt_backspace]),
            ("a path/to-".into(), 10)
        );
        assert_eq!(
            typed("", &[ctrl('w'), ctrl('u'), ctrl('k')]),
            (String::new(), 0)
        );
    }

    #[test]
    fn words_and_characters() {
        let left = key(KeyCode::Left, KeyModifiers::NONE);
        let right = key(KeyCode::Right, KeyModifiers::NONE);
        let ctrl_left = key(KeyCode::Left, KeyModifiers::CONTROL);
        let ctrl_right = key(KeyCode::Right, KeyModifiers::CONTROL);
        assert_eq!(typed("one two", &[ctrl_left]).1, 4);
        assert_eq!(typed("one two", &[alt('b'), alt('b')]).1, 0);
        assert_eq!(typed("one two", &[ctrl('a'), ctrl_right]).1, 3);
        assert_eq!(typed("one two", &[ctrl('a'), alt('f'), alt('f')]).1, 7);
        assert_eq!(typed("one two", &[left, left, right]).1, 6);
        assert_eq!(typed("one two", &[ctrl('b'), ctrl('f'), ctrl('f')]).1, 7);
        assert_eq!(typed("one two", &[ctrl('a'), alt('d')]), (" two".into(), 0));
        let delete = key(KeyCode::Delete, KeyModifiers::NONE);
        let backspace = key(KeyCode::Backspace, KeyModifiers::NONE);
        assert_eq!(typed("abc", &[left, delete]), ("ab".into(), 2));
        assert_eq!(typed("abc", &[left, backspace]), ("ac".into(), 1));
        assert_eq!(typed("abc", &[ctrl('a'), backspace]), ("abc".into(), 0));
        assert_eq!(typed("abc", &[left, ctrl('d')]), ("ab".into(), 2));
        assert_eq!(typed("añb", &[left, backspace]), ("ab".into(), 1));
    }

    #[test]
    fn other_control_and_alt_keys_type_nothing() {
        assert_eq!(command(ctrl('x'), false), None);
        assert_eq!(command(alt('x'), false), None);
        assert_eq!(command(ctrl('c'), false), Some(Command::Interrupt));
        assert_eq!(
            command(key(KeyCode::Esc, KeyModifiers::NONE), false),
            Some(Command::Cancel)
        );
        assert_eq!(command(ctrl('d'), true), Some(Command::Cancel));
        assert_eq!(
            command(key(KeyCode::Enter, KeyModifiers::NONE), false),
            Some(Command::Submit)
        );
    }

    #[test]
    fn a_paste_is_inserted_at_the_cursor() {
        let mut line = Line::new("ad");
        line.apply(Edit::Left);
        line.insert_str("b\r\nc");
        assert_eq!((line.text(), line.cursor), ("ab\ncd".into(), 4));
        assert_eq!(shown(&line.text()), ("ab cd".into(), 5));
    }
}
