"""Claims: (subject, attribute, value) statements of sources, and what the engine does with them.

- ``normalize``: value normalisers (time of day, number, date, name list, ISBN, text), so that
  spelling variants of one fact compare equal;
- ``mapping``: the declarative mapping that turns a structured or semi-structured record
  (a CSV row, a JSON object, an XML element) into claims, with provenance;
- ``extraction``: triples from free text by a language model (prompt and strict parser);
- ``resolve``: truth discovery over claims with any registered reliability estimator;
- ``multirag``: MultiRAG's homologous groups, multi-source line graph and confidences.
"""
