// SPDX-License-Identifier: Apache-2.0
// host/synth/synth_corpus.cpp: the built-in text that the synthetic tokenizer learns its
// merges from (synth_vocab.cpp). Original prose, code and a few non-English lines, written for
// tandem; its only job is to give byte-level BPE a deterministic, varied mix of English words,
// code punctuation and multi-byte UTF-8 to merge. Changing a single character here changes
// every synthetic vocabulary (and every synthetic model's token ids), so don't.
// Not here: the training itself (synth_vocab.cpp).
#include "synth/synth_vocab.h"

namespace tdm::synth {

std::string_view synth_corpus() {
    // Raw string: the code samples' quotes and backslashes stay exactly as written.
    static constexpr std::string_view kText = R"corpus(The quick brown fox jumps over the lazy dog, and then it runs back into the forest.
Every morning the baker opens her small shop at six o'clock. She bakes bread, rolls and
cakes, and the smell of fresh butter drifts down the street. People stop on their way to
work; some buy a loaf, others just want a coffee and a warm croissant. "It's the best part
of my day," says one customer, who has been coming here for years.

In the mountains the weather changes quickly. A clear blue sky can turn grey within an
hour, and hikers should always carry a jacket, water, a map and something to eat. The path
to the summit climbs through pine trees, crosses a river on an old wooden bridge, and then
follows a narrow ridge with wonderful views of the valley below.

Computers store numbers in binary. A byte holds eight bits, and a 32-bit integer can
represent about four billion different values. Floating-point numbers trade exactness for
range: they keep a sign, an exponent and a mantissa, so that very small and very large
values can be written with the same number of digits. Rounding errors are therefore normal,
and careful programs compare results with a tolerance instead of testing for equality.

Language models read text as a sequence of tokens. A tokenizer cuts the input into pieces,
looks each piece up in its vocabulary, and returns a list of integers. The model predicts a
probability for every possible next token; sampling picks one, appends it to the sequence,
and the process repeats until the model produces an end-of-text marker or reaches a limit.
Speculative decoding lets a small draft model propose several tokens, which the large target
model then verifies in a single batched pass. When the guesses are right, generation becomes
much faster without changing the output.

Our garden has tomatoes, beans, carrots, potatoes, onions, lettuce and a few strawberries.
In spring we plant the seeds; in summer we water them every evening; in autumn we harvest
what has grown and prepare the soil for winter. My grandmother taught me which plants like
sunshine and which prefer shade, and she always said that patience is the most important tool.

The history of the city goes back more than a thousand years. Merchants travelled along the
river, trading salt, wool, wine and silver. Later the town built walls, a cathedral, a market
square and a university. Today visitors walk through narrow streets, visit museums and
galleries, and sit in cafes watching students hurry between lectures.

Questions and answers:
Q: What is the capital of France?
A: Paris.
Q: How many days are there in a week?
A: Seven days: Monday, Tuesday, Wednesday, Thursday, Friday, Saturday and Sunday.
Q: Which months have thirty-one days?
A: January, March, May, July, August, October and December.
Q: Why is the sky blue?
A: Sunlight is scattered by the molecules of the atmosphere, and blue light is scattered
more strongly than red light because its wavelength is shorter.

#include <cstdint>
#include <string>
#include <vector>

// Returns the sum of all elements, accumulated in double precision.
double sum(const std::vector<float>& values) {
    double total = 0.0;
    for (float v : values) total += v;
    return total;
}

struct Point {
    int x = 0;
    int y = 0;
};

class Counter {
public:
    explicit Counter(std::string name) : name_(std::move(name)) {}
    void increment() { ++count_; }
    int64_t count() const { return count_; }
    const std::string& name() const { return name_; }

private:
    std::string name_;
    int64_t count_ = 0;
};

int main(int argc, char** argv) {
    std::vector<std::string> args(argv, argv + argc);
    if (args.size() < 2) {
        std::fprintf(stderr, "usage: %s <file>\n", args[0].c_str());
        return 1;
    }
    return 0;
}

def fibonacci(n):
    """Return the first n Fibonacci numbers as a list."""
    result = []
    a, b = 0, 1
    while len(result) < n:
        result.append(a)
        a, b = b, a + b
    return result

class Stack:
    def __init__(self):
        self.items = []

    def push(self, item):
        self.items.append(item)

    def pop(self):
        if not self.items:
            raise IndexError("pop from an empty stack")
        return self.items.pop()

for index, value in enumerate(fibonacci(10)):
    print(f"{index}: {value}")

import json
with open("config.json", "r", encoding="utf-8") as handle:
    config = json.load(handle)
print(config.get("hidden_size", 0), config["model_type"])

$ mkdir -p build && cd build
$ cmake -G Ninja -DCMAKE_BUILD_TYPE=Release ..
$ ninja -j2 && ctest --output-on-failure

{"name": "example", "version": "1.2.3", "dependencies": {"left-pad": "^1.3.0"}, "private": true}

SELECT id, name, email FROM users WHERE created_at > '2024-01-01' ORDER BY name LIMIT 10;

function greet(person) {
  const message = `Hello, ${person.firstName} ${person.lastName}!`;
  console.log(message);
  return message.length;
}

Rules of the road: drivers must stop at red lights, give way to pedestrians at crossings,
keep a safe distance from the vehicle in front, and never use a phone while driving. Cyclists
should wear helmets and use lights after dark. Children learn these rules at school, but
adults sometimes forget them when they are in a hurry.

A recipe for vegetable soup: chop two onions, three carrots, a stick of celery and a handful
of potatoes. Heat some olive oil in a large pot, add the onions and cook them slowly until
they are soft and golden. Add the other vegetables, pour in one litre of stock, season with
salt, pepper and thyme, and let everything simmer for forty minutes. Serve with bread.

The library opened a new reading room last winter. It has tall windows, comfortable chairs,
long tables with lamps, and shelves full of dictionaries, atlases, encyclopedias, novels,
poetry, biographies and scientific journals. Librarians help readers find what they need,
whether it is a rare manuscript, a newspaper article from the last century, or simply a good
story for a rainy afternoon.

Scientists measure temperature, pressure, humidity and wind speed at thousands of stations
around the world. Satellites photograph clouds and oceans; supercomputers solve equations
that describe how air and water move. The forecasts are not perfect, yet they have improved
steadily: a five-day forecast today is as accurate as a two-day forecast was forty years ago.

Music theory explains why some combinations of notes sound pleasant. An octave doubles the
frequency; a perfect fifth multiplies it by three halves. Composers build melodies, harmonies
and rhythms from these relationships, and musicians practise scales and chords for hours to
play them smoothly. Orchestras combine strings, woodwinds, brass and percussion instruments.

Cafe society: un café crème, a naïve question, a jalapeño pepper, the façade of the old
theatre, déjà vu, Grüße aus München, señor García, Ångström units, ćevapčići and pierogi.
Привет, мир! Καλημέρα. 東京は日本の首都です。 你好，世界。 Prices: 3.50 €, 12 £, 99¢; 20 °C; ½ cup; → next.
)corpus";
    return kText;
}

}  // namespace tdm::synth
