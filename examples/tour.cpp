#include <jx/jx.h>
#include <iostream>
int main() { std::cout << jx::Array({1.0, 2.0}).size() << "\n"; }
