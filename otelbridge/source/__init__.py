"""Stage 1: where bytes come from — a stdin pipe or file (:mod:`.pipe`), a wrapped child
(:mod:`.child`). Every source writes each chunk to the stream fd as soon as it is read and only
then hands the same buffer to the line splitter."""
