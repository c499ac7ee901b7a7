// The texts are C++ string literals; the adversarial set writes its
// non-ASCII characters as universal character names, so that invisible ones
// (ZWJ, variation selectors, combining marks) can be read.
#include "tests/data/tokenizer_corpus.h"

#include <random>

namespace cmpi::data::testing {

const std::vector<std::string>& multilingual_texts() {
  static const std::vector<std::string> texts{
      // GPT-2's adversarial set (contractions, whitespace runs, digits, punctuation).
      "Hello world",
      "I'm sure it's what they've said: we'll see, you'd know, they're here; don't.",
      "CAPS DON'T CONTRACT: IT'S, I'M, WE'LL",
      "tab\tseparated\t\tvalues\n\n\nthree newlines   three spaces    four",
      "trailing whitespace   ",
      "trailing newline\n",
      "  leading spaces",
      "\n",
      " ",
      "digits 0123456789 12,345.67 1e10 3rd 42nd",
      "punctuation!!! ??? ... --- *** ((())) [[]] {{}} <<>> ,,,, ;;;; :::: ''' \"\"\"",
      "\r\nwindows\r\nline endings\r\n",
      "nbsp\xC2\xA0here and\xE2\x80\x83"
      "em space and\xE3\x80\x80ideographic space",
      "zero\xE2\x80\x8Bwidth\xE2\x80\x8Cjoiner",
      "<|endoftext|> is a token here, and so is <|padding|>; <|endoftext is not",
      "code: for (int i = 0; i < n; ++i) { x[i] = y[i] * 2; } // done",
      "https://example.com/path?query=1&b=2#frag user@example.com",
      "",
      // Languages and scripts.
      "Der schnelle braune Fuchs springt über den faulen Hund. Grüße aus Köln, Straße 5.",
      "Le cœur a ses raisons que la raison ne connaît point. Où est l'hôpital ? « Déjà vu ».",
      "¿Dónde está la biblioteca? ¡Qué día más bonito! El niño comió piña.",
      "Não há mal que sempre dure, nem bem que nunca se acabe. Ação, coração, irmã.",
      "La vita è bella; perché no? Città, virtù, caffè.",
      "Zażółć gęślą jaźń. Łódź, Kraków, Gdańsk.",
      "Příliš žluťoučký kůň úpěl ďábelské ódy.",
      "Pijamalı hasta yağız şoföre çabucak güvendi. İstanbul, ılık.",
      "Tiếng Việt có nhiều dấu: người, được, những, nước, Hà Nội.",
      "Съешь же ещё этих мягких французских булок, да выпей чаю.",
      "Чуєш їх, доцю, га? Кумедна ж ти, прощайся без ґольфів!",
      "Ξεσκεπάζω την ψυχοφθόρα βδελυγμία. Αθήνα, Θεσσαλονίκη.",
      "עטלף אבק נס דרך מזגן שהתפוצץ כי חם. שלום עולם",
      "صِف خَلقَ خَودِ كَمِثلِ الشَمسِ إِذ بَزَغَت. مرحبا بالعالم ١٢٣",
      "به نام خداوند جان و خرد، کزین برتر اندیشه برنگذرد ۱۴۰۲",
      "ऋषियों को सताने वाले दुष्ट राक्षसों के राजा रावण का सर्वनाश करने वाले विष्णुवतार भगवान श्रीराम",
      "আমি বাংলায় গান গাই। ঢাকা, কলকাতা ১৯৭১",
      "யாமறிந்த மொழிகளிலே தமிழ்மொழி போல் இனிதாவது எங்கும் காணோம்",
      "เป็นมนุษย์สุดประเสริฐเลิศคุณค่า กว่าบรรดาฝูงสัตว์เดรัจฉาน",
      "我能吞下玻璃而不伤身体。中华人民共和国成立于1949年。",
      "いろはにほへと ちりぬるを わかよたれそ つねならむ。東京タワー、カタカナ。",
      "키스의 고유조건은 입술끼리 만나야 하고 특별한 기술은 필요치 않다. 한국어",
      "ნუ ჩრდილო, ბევრი სიტყვა. ქართული ენა",
      "Բարեւ աշխարհ, հայերեն լեզու",
      "ሰላም ለዓለም። አማርኛ ቋንቋ",
      "Ĉiuj homoj estas denaske liberaj kaj egalaj laŭ digno kaj rajtoj.",
      "Þú ert hér. Ærøskøbing, Œuvre, ﬁne ligature, ＦＵＬＬ　ＷＩＤＴＨ",
      "emoji 😀😃😄 👍🏽 👨‍👩‍👧‍👦 🇩🇪 ❤️ mixed😀text",
      "math ∑∫√∞ ≠ ≤ ≥ ± × ÷ ½ ¾ Ⅻ ²³ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
      // Decomposed forms that NFC composes; an NFD "café" and jamo "한".
      "cafe\xCC\x81 and caf\xC3\xA9, re\xCC\x81sume\xCC\x81, A\xCC\x8A ngstro\xCC\x88m",
      "\xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB\xE1\x84\x80\xE1\x85\xB3\xE1\x86\xAF and 한글",
      // Added tokens with their neighbours (lstrip, rstrip, space runs).
      "before   <mask>   after [SEP]   next<mask>[SEP]x",
      "a  b    c        d         e",
      "Grüße, café, 한국어 <|padding|><|padding|> end",
      // U+0085 (NEL) is White_Space, U+FEFF (BOM) is not: in GPT-2's pattern,
      // next to space-run tokens, and as what lstrip/rstrip may take.
      "x \xC2\x85y x \xEF\xBB\xBFy \xC2\x85\xC2\x85 a\xC2\x85\n\xEF\xBB\xBF\xEF\xBB\xBF b "
      "\xEF\xBB\xBF",
      "before\xC2\x85<mask>\xC2\x85 after [SEP]\xC2\x85\xC2\x85next  \xC2\x85  end\xC2\x85",
      "\xEF\xBB\xBF<mask>\xEF\xBB\xBF [SEP]\xEF\xBB\xBF  \xEF\xBB\xBF    \xEF\xBB\xBF",
  };
  return texts;
}

const std::vector<std::string>& adversarial_texts() {
  static const std::vector<std::string> texts{
      // Whitespace: runs, tabs, CR LF, lone CR, trailing, around newlines.
      "lone\rcarriage\r return\r\rx",
      "mixed \t \r\n \n\n\t  x \t\ty",
      "   \n   \n",
      "\r\r\n\n\r",
      "x\n \ny\n\n z",
      "ends with spaces and a newline  \n  ",
      "tabs\t\t\tand   spaces   \t mixed\t",
      "\t\tleading tabs",
      "a\u00A0\u00A0b \u00A0 c\u2003\u2003d",
      "!!\r\n\r\nafter punctuation ?!\n\n\n",
      // Digits: runs of 1 to 13, separators, other scripts' digits.
      "1 12 123 1234 12345 123456 1234567 12345678 123456789 1234567890123",
      "x1234y 3.14159 2024-01-01 1,000,000 0x1F 1e-10 +49 (0)30 12:34:56",
      "\uFF13\uFF14\uFF15\uFF16 \u0661\u0662\u0663\u0664\u0665 \u0967\u0968\u0969\u096A "
      "\u00B2\u00B3\u2074 \u216B\u2162",
      // Emoji: skin tones, ZWJ families and professions, flags, keycaps.
      "\U0001F44B\U0001F3FB\U0001F44B\U0001F3FF \U0001F469\U0001F3FD\u200D\U0001F4BB "
      "\U0001F468\u200D\U0001F469\u200D\U0001F467\u200D\U0001F466",
      "\U0001F3F3\uFE0F\u200D\U0001F308 \U0001F1EF\U0001F1F5\U0001F1FA\U0001F1F8 1\uFE0F\u20E3 "
      "#\uFE0F\u20E3 \u2764\uFE0F\u200D\U0001F525",
      "word\U0001F600word \U0001F600\U0001F600\U0001F600 "
      "\U0001F9D1\U0001F3FE\u200D\U0001F91D\u200D\U0001F9D1\U0001F3FB",
      // Contractions in mixed case, long s, quotes that are not contractions.
      "'S 'LL 'Ll 'lL 'RE 'Ve 'D 'M 'T 's 'll",
      "DON'T WON'T I'LL WE'RE THEY'VE SHE'D I'M IT'S",
      "\u017F '\u017F x'\u017F x'\u017Ft x'\u017Ftate Congre'\u017Fe \u212A x'\u212A",
      "IT'SELF x'Self x'SELVES x'LLama x'REd x'VEry x'Dog x'Mom x'Tea x'Sell 'Sell",
      "''s '''ll 'x 'sss 'rex 'vel ' s ` s \u2019s",
      // Combining marks.
      "\u0915\u093C\u093F\u0924\u093E\u092C \u0928\u092E\u0938\u094D\u0924\u0947 "
      "\u0938\u0902\u0938\u094D\u0915\u0943\u0924\u092E\u094D",
      "\u0627\u0644\u0652\u0639\u064E\u0631\u064E\u0628\u0650\u064A\u064E\u0651\u0629\u064F "
      "\u0645\u064F\u062D\u064E\u0645\u0651\u064E\u062F",
      "\u0E01\u0E34\u0E19\u0E02\u0E49\u0E32\u0E27 "
      "Z\u0351\u036B\u0343\u036A\u0302\u036B\u033D\u034F\u0334\u0319a\u0308\u0301lgo",
      // Characters no test tokenizer was trained on.
      "\U00010330\U00010331\U00010332 \u13E3\u13B3\u13A9 \U00013000\U00013001 \uA997\uA9AE "
      "\U0001D54F\u2FF0",
      // SentencePiece's space mark as text.
      "\u2581already\u2581marked \u2581 \u2581\u2581x",
      // The Llama family's special tokens, among text and each other.
      "<|begin_of_text|>Hello<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi",
      "text<|end_of_text|> <|reserved_special_token_0|>x",
      "<s>Hi</s> <unk> <s> </s>x<s>",
      "<|begin_of_text|>",
      "<s>",
  };
  return texts;
}

std::vector<std::string> random_texts(uint64_t seed, size_t count) {
  std::mt19937_64 rng(seed);
  const std::vector<std::string> atoms{
      "the", " the", "The", "ing", " a", "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'", " '",
      " ", "  ", "   ", "\t", "\n", "\r\n", "0", "12", " 345", "!", "?!", " ,", ".", "-", "é",
      "e\xCC\x81", "ß", "ü", "u\xCC\x88", "中", "文", "😀", "👍🏽", "Ω", "ä", "\xC2\xA0", "$",
      "_", "@", "#", "\"", "(", ")", "я", " мир", "ש", "ال", "क्ष", "ก", "한",
      "\xE1\x84\x92\xE1\x85\xA1", "\xE1\x86\xAB", "<|endoftext|>", "<|", "endoftext", "|>",
      "<|padding|>", "<mask>", "<mas", "k>", "[SEP]", "[SE", "P]", "café", "cafe", "Grüße", "Gr",
      "\xE3\x80\x80", "\xE2\x80\x83", "\xC2\x85", "\xEF\xBB\xBF",
      // For the Llama family: its special tokens, mixed-case
      // contractions, lone CR, digit runs, a ZWJ emoji, long s,
      // characters no test tokenizer was trained on, and "▁".
      "<|begin_of_text|>", "<|eot_id|>", "<|end_of_text|>", "<s>", "</s>", "<unk>", "'S", "'LL",
      "'Re", "\r", " \r", "1234", "9876543", "\u017F", "\U0001F469\U0001F3FD\u200D\U0001F4BB",
      "\U00010330", "\u13E3", "\u2581", " \u2581"};
  std::vector<std::string> texts(count);
  for (std::string& text : texts) {
    for (size_t n = rng() % 40; n > 0; --n) text += atoms[rng() % atoms.size()];
  }
  return texts;
}

}  // namespace cmpi::data::testing
