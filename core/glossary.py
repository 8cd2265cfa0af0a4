"""The product's words, explained once: the glossary page and the short explanations that
column headings and labels carry (``{% term "weight" %}``) come from this one list."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Term:
    slug: str
    name: str
    short: str  # one line, for a heading's explanation
    long: str = ""  # the glossary's paragraph (the short line when empty)

    @property
    def text(self) -> str:
        return self.long or self.short


TERMS: tuple[Term, ...] = (
    Term(
        "reliability",
        "Reliability",
        "How often a source's answers agree with the consensus of the others, estimated without fact-checkers.",
        "The estimated share of questions a source answers correctly, from the latest estimation run. It is "
        "learned by cross-checking: sources that agree with the weighted majority of the others gain, sources "
        "that contradict it lose, and the weights are re-estimated until they settle (RA-RAG's iterative "
        "weighted majority, or the estimator the run chose). Gold-checked queries, where a curator gave the "
        "right answer, anchor it.",
    ),
    Term(
        "interval",
        "Reliability [low, high]",
        "The range the reliability is likely in (95%), given how many answers it rests on.",
        "The reliability with its 95% interval: few answers give a wide interval, so a source rated 0.90 from "
        "three answers is far less certain than one rated 0.90 from three hundred.",
    ),
    Term(
        "response",
        "Response",
        "What the source's passages answered to this question.",
        "The answer generated from the passages this source returned for the question, alone, before any "
        "other source is consulted.",
    ),
    Term(
        "filter",
        "Filter",
        "Whether the response was turned into \u201cI don't know\u201d because its passages do not support it.",
        "The alignment filter (RA-RAG's f_align) checks that a response is supported by the passages it came "
        "from. A response the passages do not support (a misaligned answer, often the model's own guess) "
        "becomes \u201cI don't know\u201d and does not vote.",
    ),
    Term(
        "alignment",
        "Alignment",
        "How strongly the passages support the response (0 to 1); below the threshold tau it is filtered.",
    ),
    Term(
        "cluster",
        "Cluster",
        "Responses that say the same thing, however worded, are grouped into one cluster.",
        "Responses are grouped by meaning (bidirectional entailment, as in semantic clustering), so \u201cBram "
        "Stoker\u201d and \u201cthe Irish author Bram Stoker\u201d count as one answer.",
    ),
    Term(
        "weight",
        "Weight",
        "How much the source's vote counts, from its reliability; unreliable sources count little or against.",
        "The vote weight v = N\u00b7w \u2212 1 (N sources, w the reliability): a source no better than chance "
        "weighs about nothing. The answer is the cluster with the largest summed weight.",
    ),
    Term(
        "kappa",
        "Sources consulted (kappa)",
        "How many reliable sources with relevant passages are asked before voting.",
        "RA-RAG asks the most reliable sources first and stops once kappa of them have relevant passages, so "
        "one question does not cost a call to every source. The others are listed as not consulted.",
    ),
    Term(
        "idk",
        "I don't know",
        "The source had nothing that answers the question, or its answer was filtered; it does not vote.",
    ),
    Term(
        "confidence",
        "Confidence",
        "How likely the answer is to be right, from the estimated reliability of the sources that gave it and "
        "of those that gave another answer.",
        "The probability that the chosen answer is right, if each source is right as often as its estimated "
        "reliability says: agreeing reliable sources raise it, sources no better than chance add nothing, and "
        "one source never checked gives 0.50. Where the latest estimation run had checked queries, "
        "the probability is calibrated on them (its page shows how often answers of each confidence were "
        "right there). The sentence beside it says who agrees and who disagrees by reliability tier; an answer at 0.50 or less, "
        "resting on few sources or on sources never checked, carries a low-evidence warning.",
    ),
    Term(
        "citation",
        "Citation",
        "A numbered link from the answer to the passage that supports it, with the supporting sentence marked.",
    ),
    Term(
        "credibility",
        "Credibility",
        "How well one passage agrees with the other passages retrieved for the question (CrEst).",
        "CrEst's per-passage score: passages that are semantically coherent with the other credible passages "
        "score high, outliers (often planted or off-topic) low. It is estimated for this question only, unlike "
        "a source's reliability, which is learned across many questions.",
    ),
    Term(
        "estimation-run",
        "Estimation run",
        "A background job that asks every source a set of fact-checking queries and re-estimates reliabilities.",
    ),
    Term(
        "gold",
        "Gold-checked query",
        "A fact-checking query whose right answer a curator gave or confirmed; it anchors the estimate.",
        "A fact-checking query with a reference answer (curated, or an analyst's feedback that a curator "
        "confirmed). Runs score sources on these directly, beside the consensus.",
    ),
    Term(
        "conflict",
        "Conflict",
        "Two sources disagree when their answers to the same query fall in different clusters.",
    ),
    Term(
        "copying",
        "Copying or collusion",
        "Sources that share the same false answers more often than chance; their agreement counts once.",
        "Sources that repeat each other's false answers more often than independent sources would (AccuCopy's "
        "test). Their agreement is discounted, so a bloc of copiers cannot outvote independent sources.",
    ),
    Term(
        "claim",
        "Claim",
        "A (subject, attribute, value) statement a source makes, loaded from structured data or extracted.",
    ),
    Term(
        "node-confidence",
        "Node and graph confidence",
        "MultiRAG's scores: how consistent a group of claims is, and how much each claim can be trusted.",
        "Graph-level confidence measures how consistent the claims about one item are; node-level confidence "
        "combines a claim's agreement with the others and its source's authority. Low-confidence claims are "
        "pruned before the answer is chosen.",
    ),
)
BY_SLUG = {t.slug: t for t in TERMS}


def term(slug: str) -> Term:
    return BY_SLUG[slug]
