import type { Faker } from "@faker-js/faker";
import { faker as english } from "@faker-js/faker/locale/en";

// The package's main entry loads every locale (about half of the sandbox's start-up); its English entry loads
// only English and the base locale, the two the sandbox uses, and its instance is built the same way.
const EnglishFaker = english.constructor as new (options: { locale: Faker["rawDefinitions"] }) => Faker;

/**
 * A new Faker with the English and base locales (the same data as
 * `new Faker({ locale: [en, base] })`), for seeding on its own.
 *
 * @example
 *   const faker = englishFaker();
 *   faker.seed(42);
 */
export function englishFaker(): Faker {
  return new EnglishFaker({ locale: english.rawDefinitions });
}
