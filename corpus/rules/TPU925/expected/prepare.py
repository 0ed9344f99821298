# Not an SPMD program: its launch line stays.
print("prepared")
